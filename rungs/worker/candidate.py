"""The candidate's entry as the worker calls it: imported once per process (`load_candidate`, a KernelBench class
built per input signature), on the job's inputs moved to the device, in the torch state the judged calls run in;
and, in the instrumented build of the sections step, the entry as it was judged (`judged_entry`).
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Callable

from rungs.core.atomic import atomic_write
from rungs.worker import autotune
from rungs.worker.job import Job


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(data, default=str))  # the parent never reads half a file


_loaded: dict[tuple[str, str], Callable[..., Any]] = {}


def load_candidate(path: str, entry: str, job: "Job | dict[str, Any] | None" = None,
                   job_dir: Path | None = None) -> Callable[..., Any]:
    """Import the candidate once per process (a second import would recompile its kernels). A KernelBench task's
    job names a `module_init` file: the class is then built per input signature with the reference's weights."""
    if (path, entry) in _loaded:
        return _loaded[(path, entry)]
    spec = importlib.util.spec_from_file_location("candidate", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if fn is None:
        raise AttributeError(f"the kernel file defines no '{entry}'")
    if not isinstance(fn, type):
        autotune.discover(module, fn)  # its config space, if it declares one (rungs/worker/autotune.py)
    if isinstance(job, Job):  # the profiler's target hands the plain dict of its profile-job.json
        job = {"module_init": job.module_init, "device": job.device}
    if isinstance(fn, type) and job is not None and job.get("module_init"):  # KernelBench: class ModelNew
        from rungs.core.kernelbench_problem import ModuleEntry

        fn = ModuleEntry(fn, Path(job_dir or ".") / job["module_init"], job["device"])
    elif isinstance(fn, type):
        fn = fn()
    if not callable(fn):
        raise TypeError(f"'{entry}' is not callable")
    _loaded[(path, entry)] = fn
    return fn


def judged_entry(job: dict[str, Any], folder: Path) -> Any:
    """The candidate's entry as it was judged: imported, with the autotuned point chosen and frozen (the instrumented
    build of the sections step: rungs/worker/sections_target.py)."""
    entry = load_candidate(job["kernel"], job["entry"], job, folder)
    autotune.choose(int(job.get("config", 0)))
    autotune.freeze()
    return autotune.bound(entry)

def to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    return value


def judged_state() -> None:
    """Torch's state for the judged calls: deterministic mode, whose NaN fill of fresh memory shows unwritten
    outputs. The compile phase's calls run in it too, so that a kernel keyed on the state behaves there as judged."""
    import torch

    deterministic(True)
    torch.utils.deterministic.fill_uninitialized_memory = True


def deterministic(mode: bool) -> None:
    """torch.use_deterministic_algorithms(mode, warn_only=True) without its import of torch._inductor.config (and
    with it torch._dynamo: about 0.9 s of CPU in every worker, where no candidate compiles through inductor). A
    candidate that does use torch.compile gets inductor's own default there."""
    import torch

    torch._C._set_deterministic_algorithms(mode, warn_only=True)


def largest_case(job: Job) -> dict[str, Any]:
    """The test case with the most input elements (the one rungs/ladder/cases.write_inputs marks for the launch
    probe)."""
    return next((c for c in job.cases if c.get("probe_launches")), job.cases[-1])
