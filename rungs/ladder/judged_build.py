"""The judged build, staged for the steps that start the candidate outside the worker's timed phases: `stage` (a copy
of the kernel, and of KernelBench's module file, in a job folder such a step may write; the profile rung's witness
job), `write_job` (the job file rungs/worker/sections_target.py reads) and `judged_point` (the point of a declared
config space the autotune phase chose). The parent's half: the entry as it was judged is built in the sandboxed
process that runs it (rungs/worker/candidate.judged_entry).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb


def stage(climb: "Climb", job_dir: Path) -> tuple[Path, str | None]:
    """A copy of the kernel (and of KernelBench's module file, whose name is returned) in `job_dir`, the folder a
    tool that starts the candidate outside the worker may write."""
    job_dir.mkdir(parents=True, exist_ok=True)
    kernel_copy = job_dir / climb.kernel.name
    shutil.copy2(climb.kernel, kernel_copy)
    if climb.job is not None and climb.job.module_init:  # KernelBench: ModelNew's arguments and weights
        shutil.copy2(climb.job_dir / climb.job.module_init, job_dir / climb.job.module_init)
        return kernel_copy, climb.job.module_init
    return kernel_copy, None


def write_job(climb: "Climb", job_dir: Path, entry: dict[str, Any], name: str, **extra: Any) -> Path:
    """A folder of its own for a tool that starts the candidate outside the worker (ncu here, the instrumented build
    of rungs/ladder/sections.py): a copy of the kernel, KernelBench's module file where there is one, and the job file
    naming them and the bench shape. The sandbox lets the tool write only there and need not show where the kernel
    came from. Returns the job file."""
    kernel_copy, init = stage(climb, job_dir)
    module: dict[str, Any] = {"module_init": init, "device": "cuda"} if init else {}
    path = job_dir / name
    path.write_text(json.dumps({"kernel": str(kernel_copy.resolve()), "entry": climb.task.entry, "bench": entry,
                                **module, **judged_point(climb), **extra}))
    return path


def judged_point(climb: "Climb") -> dict[str, Any]:
    """{"config": k}: the point of a declared config space the autotune phase chose (the build that was judged);
    {} where nothing was tuned."""
    tuned = (climb.outcome.phases.get("autotune") or {}) if climb.outcome is not None else {}
    return {"config": int(tuned["winner"])} if tuned.get("configs") else {}

