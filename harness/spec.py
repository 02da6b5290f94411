"""The harness's task loader: a task YAML (rungs.core.spec.load_task; the task spec itself lives in rungs/core/spec.py,
the neutral floor both packages import) or a KernelBench problem file (harness/kernelbench.py, a task source
adapter, imported only for a `.py`: it imports torch)."""
from __future__ import annotations

from pathlib import Path

from rungs.core import spec as _core
from rungs.core.spec import TaskSpec


def load_task(path: str | Path) -> TaskSpec:
    """A task from its file: `.py` is a KernelBench problem as it is, anything else a task YAML."""
    path = Path(path)
    if path.suffix == ".py":
        from harness.kernelbench import load_problem

        return load_problem(path)
    return _core.load_task(path)
