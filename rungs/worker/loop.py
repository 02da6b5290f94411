"""The worker's loop: the child process that runs untrusted candidate code (`python -m rungs.worker JOB_DIR`, or
started ahead of its job with `--wait`: rungs/worker/__main__.py).

The parent (rungs/sandbox/pool.py) writes JOB_DIR/job.json and the inputs; this process imports the candidate,
runs the phases the job names, and writes one `phase-<name>.json` per finished phase plus the outputs as
plain tensors. It never sees a reference output: judging happens in the parent. A phase whose file is
missing died with the process (segfault, os._exit, timeout), and the parent says so.

Kept free of the harness's own imports (pydantic and friends): it must start fast and run on the GPU
machine's bare image.

Phases:
- compile (compile_phase.py): import the candidate and compile every kernel it launches, without running them,
  through the DSL backend's worker half (rungs/backends/<dsl>_worker.py); the compiled stages are written out.
- autotune (bench.py): time every point of a declared config space and choose one (CUDA only).
- run (run_phase.py): call the entry on each case's inputs (through Triton's interpreter on a CPU) and save outputs;
  the backend's launch gate counts the launches and can make them no-ops (the launch-dependence probe).
- bench (bench.py): time the entry on the bench cases (CUDA only).
- witness (bench.py): the bench phase's calls under Nsight Compute, one of them profiled (the profile rung's).
"""
from __future__ import annotations

import faulthandler
import gc
import os
import sys
import time
from pathlib import Path

from rungs.backends import load_worker
from rungs.core.precision import pin_precision
from rungs.core.tracebacks import short_traceback as _short_traceback  # with the kernel's own line (issue 39)
from rungs.timing import gpu_lock
from rungs.timing.inputs import prefetch_inputs
from rungs.worker import autotune
from rungs.worker.bench import phase_autotune, phase_bench, phase_witness
from rungs.worker.candidate import write_json
from rungs.worker.compile_phase import config_of, phase_compile
from rungs.worker.job import JOB_FILE, STACKS_FILE, TAKEN_FILE, Job
from rungs.worker.launch_gate import install_launch_gate
from rungs.worker.run_phase import phase_run
from rungs.worker.tamper import arm, check
from rungs.worker.timed_calls import take_recheck

PHASES = {"compile": phase_compile, "autotune": phase_autotune, "run": phase_run, "bench": phase_bench,
          "witness": phase_witness}
TIMED = ("autotune", "bench")
"""The phases that time the GPU (the witness runs under ncu, whose run the harness holds the lock for)."""


def lock_mode(name: str, on_cuda: bool) -> str | None:
    """How phase `name` holds the GPU's timing lock (rungs/timing/gpu_lock.py): "exclusive" to time, "shared" to run
    untimed kernels, None for none. An autotune phase with no space to tune times nothing: it waits for no one."""
    if not on_cuda or name not in (*TIMED, "run"):
        return None
    if name == "autotune":
        space = autotune.current()
        return "exclusive" if space is not None and len(space) > 1 else None
    return "shared" if name == "run" else "exclusive"


def take_job(job_dir: Path) -> Job:
    """The job, read and its file removed, with what else the job folder holds that the candidate must not read ahead
    (the recheck's inputs), before any code of the candidate's runs. The job names the parent's secrets: the seed of
    every timed call's fresh inputs (knowing it, a kernel computes the answers to come before timing starts and copies
    them while timed) and the call Nsight Compute witnesses. Once the file is gone no file API reaches them, whatever
    the static screen misses (linecache, zipfile...); in this process's memory they are behind the screen and the
    worker's guards only (docs/threat-model.md)."""
    path = job_dir / JOB_FILE
    job = Job.from_json(path.read_text())
    path.unlink()
    take_recheck(job, job_dir)
    return job


def main(job_dir: Path) -> int:
    (job_dir / TAKEN_FILE).touch()
    job = take_job(job_dir)
    on_cuda = job.device == "cuda"
    backend = load_worker(job.worker_module, job.dsl)
    # The bench inputs are made in a background thread while the candidate compiles and runs (H200: making them
    # after the run phase cost 1.6-2.4 s per candidate; with the thread the run phase went from 0.6 to 0.8 s).
    if "bench" in job.phases and job.prefetch:
        prefetch_inputs(job.bench)
    if job.timeout_s:
        # Shortly before the parent kills this process for running past its limit, write where every thread is, so
        # the verdict can say where the candidate hung (the watchdog is a C thread: no Python thread is added).
        # The parent's clock started when it wrote job.json and handed it over, maybe while this process was still
        # importing torch: count from then.
        stacks = open(job_dir / STACKS_FILE, "w")  # noqa: SIM115 - open until the process ends
        spent = max(0.0, time.time() - (job_dir / TAKEN_FILE).stat().st_mtime)  # the limit counts from there
        lead = min(2.0, 0.1 * job.timeout_s)
        faulthandler.dump_traceback_later(max(job.timeout_s - lead - spent, 0.1), file=stacks)
    if "run" in job.phases:
        # Before the candidate's first import (on a GPU the compile phase imports it, in this same process): a name it
        # binds at import (`from cutlass.cute.runtime import from_dlpack`) is then the gated one. The compile capture
        # wraps over the gate and puts it back.
        install_launch_gate(backend)
    # TF32 off unless the task asks for it: a float32 task's candidate and its reference compute in IEEE float32
    # (rungs/core/precision.py); before the candidate's import, so what it reads at import is the pinned state.
    pin_precision({str(c.get("dtype", "")) for c in [*job.cases, *job.bench]})
    # What torch, the DSL and the harness made at import is kept for the process's life: out of the collector's
    # sight, a full collection no longer walks those million objects each time (perf: the garbage collector was
    # about 13% of the CPU suite's Python time, much of it in workers running the Triton interpreter).
    gc.freeze()
    gc.enable()  # the worker imported with it off (rungs/worker/__main__.py)
    arm()  # before any candidate code: what the harness relies on, as it was
    waited = 0.0
    for name in job.phases:
        started = time.monotonic()  # system-wide clock: the parent compares it with its own
        try:
            mode = lock_mode(name, on_cuda)
            with gpu_lock.held(gpu_lock.inherited() if mode else None, gpu_lock.WORKER_WAIT_S,
                               shared=mode == "shared") as lock:
                if lock["wait_s"]:
                    waited += float(lock["wait_s"])  # type: ignore[arg-type]
                    write_json(job_dir / gpu_lock.WAIT_FILE, {"wait_s": waited})  # the harness adds it to the time limit
                result = PHASES[name](job, job_dir, on_cuda, backend)
            if lock["wait_s"] or lock["note"]:
                result.update(gpu_wait_s=lock["wait_s"], gpu_lock_note=lock["note"])
            if result.get("ok"):
                check(f"after the {name} phase")
        except BaseException as exc:  # noqa: BLE001 - any failure of candidate code is a result, not a crash
            result = {"ok": False, "error": _short_traceback(exc, job.kernel), "type": type(exc).__name__,
                      "config": config_of(exc)}
        result.update(started=started, wall_s=time.monotonic() - started)
        write_json(job_dir / f"phase-{name}.json", result)
        if not result["ok"]:
            break
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: candidate threads or atexit hooks must not change the outcome


def wait_for_job(device: str, worker_module: str, ready: str | None = None) -> None:
    """A pre-started worker: pay for Python, torch, the DSL and the CUDA context now, while the model is still
    writing the next kernel, then take one job directory from stdin and run it."""
    import torch

    load_worker(worker_module, "").preload(device)

    if device == "cuda":
        torch.empty(1, device="cuda")  # creates the context
    if ready:  # the harness hands a GPU job over only once no other worker of its pool is still starting
        Path(ready).touch()
    line = sys.stdin.readline().strip()
    if not line:  # the harness exited without a job for us
        os._exit(0)
    job_dir = Path(line)
    os.chdir(os.environ.get("TMPDIR") or job_dir)  # the scratch folder: in the sandbox, its private /tmp
    main(job_dir)
