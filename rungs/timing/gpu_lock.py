"""One GPU's timing lock, shared by every harness process on the host.

Two harness processes timing on one GPU at once time each other: on the H200 a 4096 x 8192 softmax's median went
from 549 us to 1774 us while another climb ran beside it, and the witness then failed an honest kernel ("the median
is 3.2x what Nsight Compute measured"). So whatever times a GPU takes its lock exclusively first: the sandboxed
worker around its autotune and bench phases (through a file descriptor the pool opens and hands to the sandbox,
since the sandbox has its own /tmp), the harness around the trusted Nsight Compute runs (witness, profile,
sections), and the trusted baseline process around each eager/torch.compile timing (not its imports and
compiles). Untimed GPU work takes it shared (the worker's run phase, the trusted bench-shape reference): any number
at once, none beside a timing. Compiles, imports, the CPU's correctness
checks and everything else hold nothing and overlap freely (`harness eval -j N` on one GPU).

The lock is an advisory `flock` on /tmp/kernel-harness-gpu-locks/<GPU UUID>.lock (one file per physical GPU, so
two processes that number the GPUs differently still agree). Nothing is judged on it: a candidate that holds its
descriptor's lock only makes other processes wait, and every wait ends after a limit, past which the timing goes
ahead and says that it ran beside another process's (`note`). This module imports nothing of the harness: the
worker runs it.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

FD_VAR = "HARNESS_GPU_LOCK_FD"
"""The environment variable that gives a sandboxed worker its GPU's lock (a descriptor number it inherited)."""

WORKER_WAIT_S = 60.0
"""How long a worker waits for the lock at each phase. The worker writes its waits so far to WAIT_FILE in its job
folder, and the harness adds them (at most GRACE_S) to the job's time limit: a wait is not the candidate's time."""

WAIT_FILE = "gpu-wait.json"
GRACE_S = 2 * WORKER_WAIT_S
"""The most a job's time limit grows for its waits (the file is the worker's claim: a candidate could write it)."""

HARNESS_WAIT_S = 300.0
"""How long the harness waits for the lock before a trusted timing (ncu, baselines)."""

POLL_S = 0.05


def _usable(folder: Path, uid: int) -> bool:
    """A real folder (not a link) owned by root or by us: a folder another user owns could have its lock files
    swapped under us."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid in (0, uid) and os.access(folder, os.W_OK | os.X_OK)


def lock_dir() -> Path:
    """The host's folder of GPU locks: one for all users (sticky, like /tmp), or the user's own where that one
    cannot be used. The shared one is only ever made or changed by its maker, never through a link (the harness
    may be root, and /tmp is anyone's)."""
    uid = os.geteuid()
    shared = Path(tempfile.gettempdir()) / "kernel-harness-gpu-locks"
    try:
        os.mkdir(shared, 0o700)
        os.chmod(shared, 0o1777)  # made just now by us: a folder, not a link someone left
    except OSError:
        pass
    if _usable(shared, uid) and os.lstat(shared).st_mode & stat.S_ISVTX:
        return shared
    own = Path(tempfile.gettempdir()) / f"kernel-harness-gpu-locks-{uid}"
    with contextlib.suppress(OSError):
        os.mkdir(own, 0o700)
    if _usable(own, uid) and os.lstat(own).st_uid == uid:
        return own
    raise OSError(f"no usable folder for the GPU timing locks ({shared}, {own})")


def open_lock(key: str, read_only: bool = False, suffix: str = ".lock") -> int:
    """A new descriptor of GPU `key`'s lock file (a UUID or an index); the caller closes it. Each open is its own
    lock holder: a worker's descriptor and the harness's never share a lock. `read_only` for the one handed to a
    sandbox (flock needs no write access, and the candidate gets none). Never through a link, only a plain file.
    `suffix` names another file of the GPU's (its memory ledger, rungs/ladder/gpu_memory.py)."""
    path = lock_dir() / (re.sub(r"[^A-Za-z0-9._-]+", "_", key) + suffix)
    flags = os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o666)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a plain file")
        if st.st_uid == os.geteuid():
            os.fchmod(fd, 0o666)  # any user's harness on this host times on the same GPU
        if not read_only:
            return fd
        ro = os.open(path, os.O_RDONLY | flags)
        same = os.fstat(ro)
        if (same.st_dev, same.st_ino) != (st.st_dev, st.st_ino):
            os.close(ro)
            raise OSError(f"{path} changed while it was opened")
        os.close(fd)
        return ro
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


@contextlib.contextmanager
def held(fd: int | None, wait_s: float, shared: bool = False) -> Iterator[dict[str, object]]:
    """Hold the lock of descriptor `fd` (None: no lock to take) for the block: exclusively to time the GPU, or
    `shared` to run untimed work on it (a run phase, a trusted reference at a bench shape), which any number of
    processes may do at once but none while another times. Yields what happened: `wait_s` (seconds waited) and
    `note` ("" when the lock was held, else why the block ran without it)."""
    info: dict[str, object] = {"wait_s": 0.0, "note": ""}
    if fd is None:
        yield {**info, "exclusive": _nothing_to_take}
        return
    locked, info["wait_s"], info["note"] = take(fd, shared, wait_s)

    def exclusive() -> dict[str, object]:
        """Turn this shared hold into an exclusive one, waiting as above: a trusted tool's start-up ran beside
        untimed work, its timing runs alone. flock converts by letting go first, so another holder may come in
        between (the tool is idle, waiting for its job, then)."""
        nonlocal locked
        locked, wait, note = take(fd, False, wait_s)
        return {"wait_s": wait, "note": note}

    info["exclusive"] = exclusive
    try:
        yield info
    finally:
        if locked:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)


def _nothing_to_take() -> dict[str, object]:
    """`exclusive` where no lock is held (no GPU, or no lock file): nothing to wait for."""
    return {"wait_s": 0.0, "note": ""}


def take(fd: int, shared: bool, wait_s: float) -> tuple[bool, float, str]:
    """flock `fd` shared or exclusive, polling up to `wait_s`: (taken, seconds waited, a note when not taken)."""
    t0 = time.monotonic()
    note = ""
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            return True, round(time.monotonic() - t0, 3), ""
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                note = f"the GPU's timing lock could not be taken ({os.strerror(exc.errno or 0)})"
                break
        if time.monotonic() - t0 >= wait_s:
            note = (f"another process held this GPU's timing lock for over {wait_s:.0f} s: ran beside its "
                    "work" + ("" if shared else ", so the figures may be slower than the kernel alone"))
            break
        time.sleep(POLL_S)
    return False, round(time.monotonic() - t0, 3), note


@contextlib.contextmanager
def held_for(key: str | None, wait_s: float = HARNESS_WAIT_S, shared: bool = False) -> Iterator[dict[str, object]]:
    """Hold GPU `key`'s lock for the block through a descriptor of its own (None: no GPU, no lock)."""
    if key is None:
        yield {"wait_s": 0.0, "note": "", "exclusive": _nothing_to_take}
        return
    try:
        fd = open_lock(key)
    except OSError as exc:  # no lock to be had: the work goes on, and says so
        yield {"wait_s": 0.0, "note": f"the GPU's timing lock could not be opened ({exc})",
               "exclusive": _nothing_to_take}
        return
    try:
        with held(fd, wait_s, shared) as info:
            yield info
    finally:
        os.close(fd)


def inherited() -> int | None:
    """The lock descriptor this (worker) process was handed, if any and still open."""
    raw = os.environ.get(FD_VAR, "")
    if not raw.isdigit():
        return None
    try:
        os.fstat(int(raw))
    except OSError:
        return None
    return int(raw)


__all__ = ["FD_VAR", "WORKER_WAIT_S", "WAIT_FILE", "GRACE_S", "HARNESS_WAIT_S", "lock_dir", "open_lock", "held",
           "held_for", "inherited", "take"]
