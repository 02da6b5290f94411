"""The rung protocol and the one ordered list of rungs a climb walks.

A rung is one callable from the climb (what earlier rungs learned) to its RungResult; `needs` says what it must
have to run at all, and the ladder (rungs/ladder/ladder.py) skips it, with the reason, when the climb lacks that. A new
rung is one module and one entry in RUNGS.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

from rungs.ladder.climb import Climb
from rungs.core.result import RungResult

EXECUTES = "executes"
"""The kernel can be run here: a GPU, or the DSL's interpreter on a CPU (Backend.verifies_on_cpu)."""
GPU = "gpu"
"""A CUDA device: timing and profiling."""


@runtime_checkable
class Rung(Protocol):
    name: str
    needs: frozenset[str]
    """Of EXECUTES, GPU: without it the rung is skipped (the climb's `unverified` reason, or "no CUDA device")."""
    runs_after_failure: bool
    """Runs even after an earlier rung failed (the dumps of a kernel that compiled but computes wrong)."""

    def __call__(self, climb: Climb) -> RungResult: ...


@dataclass(frozen=True)
class Step:
    """A rung that is one function of the climb, named "module:function" and imported on first use: a climb on a CPU
    never loads the profiler's or the benchmark's code."""

    name: str
    target: str
    needs: frozenset[str] = frozenset()
    runs_after_failure: bool = False

    def __call__(self, climb: Climb) -> RungResult:
        module, _, function = self.target.partition(":")
        run: Callable[[Climb], RungResult] = getattr(importlib.import_module(module), function)
        return run(climb)


def skip_reason(rung: Rung, climb: Climb) -> str | None:
    """Why the ladder skips `rung` on this climb, or None: it runs."""
    failed = climb.failed
    if failed is not None and not rung.runs_after_failure:
        return f"after {failed} failed"
    if EXECUTES in rung.needs and not climb.executes:
        return climb.unverified
    if GPU in rung.needs and climb.device != "cuda":
        return "no CUDA device"
    return None


RUNGS: list[Rung] = [
    Step("precheck", "rungs.ladder.precheck:rung"),
    Step("compile", "rungs.ladder.compile:rung"),
    Step("run", "rungs.ladder.run:rung"),  # says itself why it skips: the entry's own failure during compile still fails it
    Step("correctness", "rungs.ladder.correctness:rung", needs=frozenset({EXECUTES})),
    Step("benchmark", "rungs.ladder.benchmark:rung", needs=frozenset({EXECUTES, GPU})),
    Step("dumps", "rungs.ladder.dumps:climb_rung", runs_after_failure=True),
    Step("profile", "rungs.ladder.profile:rung", needs=frozenset({EXECUTES, GPU})),
    Step("sections", "rungs.ladder.sections:rung"),  # says itself why it skips: "no sections marked" before "no GPU"
    Step("roofline", "rungs.ladder.roofline:climb_rung", needs=frozenset({EXECUTES})),
]
"""The ladder, in order."""
ORDER = [r.name for r in RUNGS]


def rung(name: str) -> Rung:
    """The rung of that name (tests call one rung on a climb they set up)."""
    return next(r for r in RUNGS if r.name == name)
