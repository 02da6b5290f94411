"""The harness's task loader: a YAML task (rungs/core/spec.py, the neutral floor both packages import) or a
KernelBench problem file (harness/kernelbench.py, a task source adapter). Everything else of the task spec lives in
rungs.core.spec; the names below are re-exported for code written against this module's old path."""
from __future__ import annotations

from pathlib import Path

from rungs.core import spec as _core
from rungs.core.spec import *  # noqa: F401,F403
from rungs.core.spec import Budgets, TaskSpec, load_callable  # noqa: F401


def load_task(path: str | Path) -> TaskSpec:
    """A task from its file: `.py` is a KernelBench problem as it is, anything else a task YAML."""
    path = Path(path)
    if path.suffix == ".py":
        from harness.kernelbench import load_problem

        return load_problem(path)
    return _core.load_task(path)
