"""Whether a task's bench shapes can fit on the GPU at all, asked before any work of a climb.

A KernelBench problem at its real size holds tensors of several GB (23_Softmax: 6.4 GB an input); on a GPU whose
free memory cannot hold even one bench shape's inputs and outputs, the climb would end minutes later in a CUDA
out-of-memory error inside the candidate's process. The floor is the roofline's byte count (the task's inputs and
outputs: for a KernelBench problem, measured from its tensors), which every kernel needs resident at once: a
shortfall against it is certain, so it is said in one line before the climb starts. Above it the climb goes on
(a kernel may still need workspace; that shows as the run's own error).

Free memory comes from nvidia-smi, so the harness's own process makes no CUDA context.

Climbs side by side on one GPU (`harness eval -j N`, `harness run --parallel P`) each need their bench tensors at
once: four of level 1's largest problems (45_Average_Pooling_2D alone holds 17 GB of inputs) would run the GPU out
of memory and fail honest kernels, and a climb that asked for free memory while others held theirs was refused as
too large for the GPU. So a climb whose bench tensors are large is admitted against a host-wide ledger per GPU
(`admitted`): it reserves RESERVE_FACTOR times its bench shape's bytes and waits while the other climbs' reservations
and its own would exceed BUDGET_FRACTION of the GPU's memory; a climb alone on the GPU always goes ahead, and only it
is held to the free-memory check above (with others on the GPU, their use is what the ledger accounts for).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from rungs.core.spec import TaskSpec
from rungs.timing import gpu_lock

GIB = float(1 << 30)
RESERVE_FACTOR = 3.0
"""GPU memory a climb reserves, in multiples of its largest bench shape's inputs, outputs and weights: the worker's
inputs, outputs and fresh input values, then the trusted float64 reference (twice their float32 bytes) once the
worker is gone."""
BUDGET_FRACTION = 0.9
"""The share of the GPU's memory the reservations of climbs side by side may add up to."""
MIN_RESERVED = GIB
"""Below this reservation a climb takes no part in the ledger (every demo task, most KernelBench problems)."""
WAIT_S = 3600.0
"""The longest a climb waits to be admitted; past it, it goes ahead and says so."""
POLL_S = 0.5


def _query(entry: str, field: str) -> float | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, f"--query-gpu={field}", "--format=csv,noheader,nounits", "-i", entry],
                             capture_output=True, text=True, timeout=20, check=False)
        return float(out.stdout.strip().splitlines()[0]) * (1 << 20) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def free_bytes(entry: str) -> float | None:
    """Free memory of the GPU that CUDA_VISIBLE_DEVICES entry `entry` names (an index or a UUID), from nvidia-smi;
    None where it cannot say (no nvidia-smi, an entry it does not know)."""
    return _query(entry, "memory.free")


def total_bytes(entry: str) -> float | None:
    """All the memory of GPU `entry`, from nvidia-smi; None where it cannot say."""
    return _query(entry, "memory.total")


def bench_bytes(task: TaskSpec) -> tuple[float, dict[str, Any]] | None:
    """The largest bench shape's inputs and outputs in bytes (the roofline's count) and that shape; None when no
    shape's byte formula evaluates."""
    sizes = []
    for shape in task.shapes.bench:
        try:
            sizes.append((float(task.floor_terms(shape)[1]), shape))
        except Exception:  # noqa: BLE001 - a byte formula that does not evaluate: the roofline rung says so later
            continue
    resident = getattr(task, "resident_bytes", None)  # a KernelBench problem's tensors, roofline or none
    if callable(resident) and (found := resident()) is not None:
        sizes.append(found)
    return max(sizes, key=lambda s: s[0]) if sizes else None


def shortfall(task: TaskSpec, entry: str, free: float | None = None) -> str | None:
    """One line (`file:line: key ...: why`) when the largest bench shape's inputs and outputs exceed the GPU's free
    memory; None when they fit or when either figure is unknown. `entry`: the GPU as nvidia-smi names it
    (rungs/sandbox/gpus.identity)."""
    free = free_bytes(entry) if free is None else free
    if free is None:
        return None
    sized = bench_bytes(task)
    if sized is None:
        return None
    need, shape = sized
    if need <= free:
        return None
    label = ", ".join(f"{k}={v}" for k, v in shape.items())
    return (f"{task.where(*task.shape_loc(shape))}: the bench shape {label} needs at least {need / GIB:.2f} GiB of "
            f"GPU memory for its inputs and outputs, and the GPU ({entry}) has {free / GIB:.2f} GiB free: smaller bench shapes, or a GPU with more free "
            "memory")


@dataclass
class Admission:
    """What admitting a climb took: seconds waited, the bytes other climbs had reserved when it went in (0: alone on
    the GPU), its own reservation, and a note when it went in without one."""

    wait_s: float = 0.0
    others: float = 0.0
    reserved: float = 0.0
    note: str = ""


LEDGER_KEY = re.compile(r"^(\d{1,9}):(\d{1,20}):[0-9a-f]{12}$")
"""A reservation's name: pid, the process's start time (clock ticks since boot, /proc/PID/stat), a random tag."""
LEDGER_LOCK_S = 60.0
"""The longest a climb waits for another process's read-and-write of the ledger (a moment, unless it was stopped)."""


def _started(pid: int) -> int | None:
    """A live process's start time (so a pid reused after a killed climb is not taken for it); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _me() -> str:
    return f"{os.getpid()}:{_started(os.getpid()) or 0}:{uuid.uuid4().hex[:12]}"


def _live(key: object) -> bool:
    """Whether `key` names a reservation of a process that is still the one that made it."""
    m = LEDGER_KEY.match(key) if isinstance(key, str) else None
    if m is None or int(m.group(1)) <= 0:
        return False
    started = _started(int(m.group(1)))
    return started is not None and started == int(m.group(2))


@contextlib.contextmanager
def _ledger(fd: int) -> Iterator[dict[str, Any]]:
    """The GPU's ledger, {"held": {name: bytes}, "waiting": [name, ...]} (the waiters in the order they came),
    locked for the block and written back after it. Whatever does not look like a live process's entry is dropped:
    a killed climb's, a malformed one (the file is anyone's on this host)."""
    if not gpu_lock.take(fd, False, LEDGER_LOCK_S)[0]:  # polled as the timing lock is, with a limit of its own
        raise OSError(f"the GPU's memory ledger could not be locked within {LEDGER_LOCK_S:.0f} s")
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = b""
        while chunk := os.read(fd, 1 << 16):
            raw += chunk
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        held = data.get("held") if isinstance(data.get("held"), dict) else {}
        waiting = data.get("waiting") if isinstance(data.get("waiting"), list) else []
        ledger = {"held": {k: float(v) for k, v in held.items()
                           if isinstance(v, (int, float)) and 0 <= v < 1e15 and _live(k)},
                  "waiting": [k for k in dict.fromkeys(waiting) if _live(k)]}
        yield ledger
        text = json.dumps(ledger).encode()
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, text)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def admitted(task: TaskSpec, entry: str, total: float | None = None, wait_s: float = WAIT_S,
             poll_s: float = POLL_S) -> Iterator[Admission]:
    """Hold a reservation of GPU `entry`'s memory for the block (module docstring): RESERVE_FACTOR x the task's
    largest bench shape's bytes, admitted once the reservations of the climbs beside it leave room under
    BUDGET_FRACTION of `total` (nvidia-smi's figure when None), or at once when no other climb holds one; climbs
    that wait go in the order they came (a large one is not passed over for ever by smaller ones). A task under
    MIN_RESERVED, or a GPU whose memory is unknown, reserves nothing."""
    info = Admission()
    sized = bench_bytes(task)
    need = RESERVE_FACTOR * sized[0] if sized else 0.0
    if need < MIN_RESERVED:
        yield info
        return
    total = total_bytes(entry) if total is None else total
    if total is None:
        yield info
        return
    me = _me()
    t0 = time.monotonic()
    try:
        fd = gpu_lock.open_lock(entry, suffix=".memory")
    except OSError as exc:
        info.note = f"the GPU's memory ledger could not be opened ({exc}): admitted without a reservation"
        yield info
        return
    try:
        try:
            while True:
                with _ledger(fd) as ledger:
                    others = sum(ledger["held"].values())
                    ahead = ledger["waiting"][:ledger["waiting"].index(me)] if me in ledger["waiting"] else \
                        ledger["waiting"]
                    fits = others == 0 or others + need <= BUDGET_FRACTION * total
                    late = time.monotonic() - t0 >= wait_s
                    if (fits and not ahead) or late:
                        ledger["held"][me] = need
                        ledger["waiting"] = [k for k in ledger["waiting"] if k != me]
                        info.others, info.reserved = others, need
                        if late and not (fits and not ahead):
                            info.note = (f"waited {wait_s:.0f} s for {need / GIB:.1f} GiB of GPU memory held by "
                                         "other climbs: went ahead beside them")
                        break
                    if me not in ledger["waiting"]:
                        ledger["waiting"].append(me)
                time.sleep(poll_s)
        except OSError as exc:  # the ledger stayed locked: go on without it, and say so
            info.note = f"{exc}: admitted without a reservation"
        info.wait_s = round(time.monotonic() - t0, 3)
        yield info
    finally:
        # never the verdict's end: whatever the ledger holds, letting go of it is best effort
        with contextlib.suppress(Exception), _ledger(fd) as ledger:
            ledger["held"].pop(me, None)
            ledger["waiting"] = [k for k in ledger["waiting"] if k != me]
        os.close(fd)


__all__ = ["Admission", "admitted", "bench_bytes", "free_bytes", "shortfall", "total_bytes"]
