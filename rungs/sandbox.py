"""Runs the worker (rungs/worker.py) on a candidate in a fresh child process, and reads back what it wrote.

Isolation, in the order it matters: a new Python process per job (its own session, so the whole process
group can be killed); a wall-time limit; an environment with no API keys, tokens or secrets; a scratch
working folder and HOME; limits on address space (CPU only: CUDA reserves huge virtual ranges), file size
and core dumps; no network where the OS allows a new network namespace; a host-memory watchdog; and at the end,
every process the job started is killed, also one that called setsid() (rungs/isolation.py). A fault in candidate
code ends the child, never the harness. docs/threat-model.md says what each defence covers and where it stops.
"""
from __future__ import annotations

import atexit
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungs import isolation

# Variables passed through to the child; everything else (API keys, cloud tokens, SSH agents) stays behind.
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
            "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "OMP_NUM_THREADS",
            "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH",
            "TRITON_DEFAULT_FP_FUSION", "PYTHONPATH")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")

CPU_ADDRESS_SPACE_BYTES = 16 << 30
MAX_FILE_BYTES = 4 << 30
HOST_RSS_LIMIT_BYTES = 32 << 30
"""The worker's process tree is killed when its resident host memory passes this (on a GPU, where the address-space
limit cannot be used)."""


def scrubbed_env(scratch: Path, interpret: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in ENV_KEEP and not any(m in k.upper() for m in SECRET_MARKERS)}
    repo_root = str(Path(__file__).resolve().parent.parent)  # so `-m rungs.worker` imports from a checkout too
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo_root, env.get("PYTHONPATH", "")) if p)
    env.update(HOME=str(scratch), TMPDIR=str(scratch), TRITON_CACHE_DIR=str(scratch / "triton-cache"),
               PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", TRITON_DEFAULT_FP_FUSION="1")
    env.setdefault("OMP_NUM_THREADS", "1")  # the CPU interpreter is numpy-bound; threads only fight each other
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def _limits(on_cuda: bool, cut_network: str | None = None) -> None:
    """Runs in the child between fork and exec."""
    isolation.child_setup(cut_network)
    if not on_cuda:
        resource.setrlimit(resource.RLIMIT_AS, (CPU_ADDRESS_SPACE_BYTES, CPU_ADDRESS_SPACE_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@dataclass
class JobOutcome:
    """What one worker process left behind."""

    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    returncode: int | None = None
    timed_out: bool = False
    memory_exceeded: bool = False
    notes: list[str] = field(default_factory=list)
    """How the worker was isolated (network cut or not)."""
    seconds: float = 0.0
    log_tail: str = ""

    def died_in(self, phase: str) -> str | None:
        """Why `phase` has no result, in one line, or None when it finished."""
        if phase in self.phases:
            return None
        if self.memory_exceeded:
            return (f"killed: the process passed the {HOST_RSS_LIMIT_BYTES / (1 << 30):g} GiB host-memory limit "
                    "(out of host memory)")
        if self.timed_out:
            return f"timed out: the process ran past its {self.seconds:.0f} s limit and was killed (infinite loop or hang?)"
        rc = self.returncode
        if rc is not None and rc < 0:
            name = signal.Signals(-rc).name
            hint = {"SIGSEGV": " (segmentation fault)", "SIGABRT": " (abort)", "SIGKILL": " (out of memory?)",
                    "SIGBUS": " (bus error)"}.get(name, "")
            return f"the process was killed by {name}{hint}"
        tail = self.log_tail.strip().splitlines()[-1:] or [""]
        return f"the process exited with code {rc} before finishing: {tail[0][:300]}"


@dataclass
class _Worker:
    """A worker process started ahead of its job (`python -m rungs.worker --wait DEVICE`)."""

    proc: subprocess.Popen[bytes]
    home: Path
    log_path: Path
    log: Any
    marker: str
    """Set in the worker's environment: finds every process of this job at the end, setsid escapees too."""


_spares: dict[tuple[str, bool], _Worker] = {}
_keep_warm = False


def keep_warm(on: bool = True) -> None:
    """After each job, start the next worker at once, so it imports torch and Triton (and makes its CUDA context)
    while the model writes the next kernel. The agent loop turns this on; a one-off `harness check` does not."""
    global _keep_warm
    _keep_warm = on


def _spawn(device: str, interpret: bool) -> _Worker:
    home = Path(tempfile.mkdtemp(prefix="harness-worker-"))
    log_path = home / "worker.log"
    log = open(log_path, "wb")
    marker = isolation.new_marker()
    env = scrubbed_env(home, interpret)
    env[isolation.MARKER_VAR] = marker
    cut_network = isolation.network_mode()
    proc = subprocess.Popen([sys.executable, "-m", "rungs.worker", "--wait", device], cwd=home, env=env,
                            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: _limits(device == "cuda", cut_network))
    return _Worker(proc, home, log_path, log, marker)


def warm_next(device: str) -> None:
    """At the end of a climb, when keep_warm is on: start the worker the next candidate's compile will take.
    Not earlier: a worker importing torch beside the harness's own correctness judging slowed that judging from
    0.1 s to 3 s on the H200 machine (thread pools contending)."""
    if _keep_warm:
        prestart(device, interpret=False)


def prestart(device: str, interpret: bool) -> None:
    """Make sure a worker for (device, interpret) is starting or waiting."""
    spare = _spares.get((device, interpret))
    if spare is None or spare.proc.poll() is not None:
        _spares[(device, interpret)] = _spawn(device, interpret)


@atexit.register
def _stop_spares() -> None:
    for spare in _spares.values():
        isolation.kill_job(spare.proc, spare.marker)
        shutil.rmtree(spare.home, ignore_errors=True)
    _spares.clear()


def run_worker(job_dir: Path, job: dict[str, Any], timeout_s: float, interpret: bool) -> JobOutcome:
    """Hand the job to a waiting worker (or a fresh one), run it to completion or its timeout, and collect its
    phase files. The timeout counts from the hand-over."""
    device = job["device"]
    job_dir = job_dir.resolve()
    (job_dir / "scratch").mkdir(parents=True, exist_ok=True)
    for old in job_dir.glob("phase-*.json"):
        old.unlink()
    (job_dir / "job.json").write_text(json.dumps(job))
    prestart(device, interpret)  # the waiting worker, or a fresh one if it is missing or died
    worker = _spares.pop((device, interpret))
    outcome = JobOutcome(notes=[isolation.network_note()])
    t0 = time.monotonic()
    try:
        assert worker.proc.stdin is not None
        worker.proc.stdin.write(f"{job_dir}\n".encode())
        worker.proc.stdin.close()
        outcome.returncode, stopped = isolation.wait(worker.proc, timeout_s, HOST_RSS_LIMIT_BYTES)
        outcome.timed_out, outcome.memory_exceeded = stopped == "timeout", stopped == "memory"
    except BrokenPipeError:  # the worker died while waiting (killed from outside): its log says why
        outcome.returncode = worker.proc.wait()
    finally:
        isolation.kill_job(worker.proc, worker.marker)
        worker.log.close()
    outcome.seconds = time.monotonic() - t0 if not outcome.timed_out else timeout_s
    shutil.copy2(worker.log_path, job_dir / "worker.log")
    outcome.log_tail = _tail(job_dir / "worker.log")
    for name in job["phases"]:
        path = job_dir / f"phase-{name}.json"
        if path.is_file():
            try:
                outcome.phases[name] = json.loads(path.read_text())
            except json.JSONDecodeError:
                pass  # a half-written file counts as a phase that never finished
    shutil.rmtree(job_dir / "scratch", ignore_errors=True)
    shutil.rmtree(worker.home, ignore_errors=True)
    return outcome


def run_command(argv: list[str], job_dir: Path, timeout_s: float, stdout_path: Path) -> JobOutcome:
    """Run a trusted tool that starts candidate code (ncu over rungs/profile_target.py) under the worker's
    isolation: scrubbed environment, scratch HOME, its own session killed as a whole, a time limit. Its stdout goes
    to `stdout_path`, its stderr to `stdout_path` with `.log` (the outcome's log_tail)."""
    scratch = job_dir / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    log_path = stdout_path.with_suffix(".log")
    t0 = time.monotonic()
    marker = isolation.new_marker()
    env = scrubbed_env(scratch.resolve(), interpret=False)
    env[isolation.MARKER_VAR] = marker
    with open(stdout_path, "wb") as out, open(log_path, "wb") as log:
        # No network namespace here: the profiler and its target process talk over local sockets.
        proc = subprocess.Popen(argv, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                start_new_session=True, preexec_fn=lambda: _limits(True))
        outcome = JobOutcome(notes=["network not cut for the profiler"])
        try:
            outcome.returncode = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
        finally:
            isolation.kill_job(proc, marker)
    outcome.seconds = time.monotonic() - t0 if not outcome.timed_out else timeout_s
    outcome.log_tail = _tail(log_path)
    shutil.rmtree(scratch, ignore_errors=True)
    return outcome


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
