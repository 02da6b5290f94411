"""Whether a task's bench shapes can fit on the GPU at all, asked before any work of a climb.

A KernelBench problem at its real size holds tensors of several GB (23_Softmax: 6.4 GB an input); on a GPU whose
free memory cannot hold even one bench shape's inputs and outputs, the climb would end minutes later in a CUDA
out-of-memory error inside the candidate's process. The floor is the roofline's byte count (the task's inputs and
outputs: for a KernelBench problem, measured from its tensors), which every kernel needs resident at once: a
shortfall against it is certain, so it is said in one line before the climb starts. Above it the climb goes on
(a kernel may still need workspace; that shows as the run's own error).

Free memory comes from nvidia-smi, so the harness's own process makes no CUDA context.
"""
from __future__ import annotations

import shutil
import subprocess

from rungs.core.spec import TaskSpec

GIB = float(1 << 30)


def free_bytes(entry: str) -> float | None:
    """Free memory of the GPU that CUDA_VISIBLE_DEVICES entry `entry` names (an index or a UUID), from nvidia-smi;
    None where it cannot say (no nvidia-smi, an entry it does not know)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", entry],
                             capture_output=True, text=True, timeout=20, check=False)
        return float(out.stdout.strip().splitlines()[0]) * (1 << 20) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def shortfall(task: TaskSpec, entry: str, free: float | None = None) -> str | None:
    """One line (`file:line: key ...: why`) when the largest bench shape's inputs and outputs exceed the GPU's free
    memory; None when they fit or when either figure is unknown. `entry`: the GPU as nvidia-smi names it
    (rungs/sandbox/gpus.identity)."""
    free = free_bytes(entry) if free is None else free
    if free is None:
        return None
    sizes = []
    for shape in task.shapes.bench:
        try:
            sizes.append((task.floor_terms(shape)[1], shape))
        except Exception:  # noqa: BLE001 - a byte formula that does not evaluate: the roofline rung says so later
            continue
    if not sizes:
        return None
    need, shape = max(sizes, key=lambda s: s[0])
    if need <= free:
        return None
    label = ", ".join(f"{k}={v}" for k, v in shape.items())
    return (f"{task.where(*task.shape_loc(shape))}: the bench shape {label} needs at least {need / GIB:.2f} GiB of "
            f"GPU memory for its inputs and outputs, and the GPU ({entry}) has {free / GIB:.2f} GiB free: smaller bench shapes, or a GPU with more free "
            "memory")


__all__ = ["free_bytes", "shortfall"]
