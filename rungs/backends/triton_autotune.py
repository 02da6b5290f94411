"""Triton's own autotuner (`@triton.autotune`) as a declared config space, on the worker's side: the autotuners a
candidate's module exposes, each config's label, and an autotuner pinned to one of its configs, so that Triton launches
that config and times nothing itself. Which config is the judged point is rungs/worker/autotune.py's; the harness
times the points (rungs/worker/bench.py tune_space).

Imported inside the sandboxed worker only; Triton itself only once the candidate has imported it.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Sequence


def config_label(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in getattr(config, "kwargs", {}).items()]
    for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        value = getattr(config, name, None)
        if value is not None and not (name == "num_ctas" and value == 1):
            parts.append(f"{name}={value}")
    return " ".join(parts) or "default"


def autotuners(module: Any) -> list[Any]:
    """The triton.autotune objects the module exposes, each once (through heuristics and jit wrappers)."""
    if "triton" not in sys.modules:
        return []
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:  # pragma: no cover - an old or broken Triton
        return []
    found: dict[int, Any] = {}
    for value in list(vars(module).values()):
        obj = value
        for _ in range(8):  # heuristics(autotune(jit(fn))) and the other orders
            if isinstance(obj, Autotuner):
                found.setdefault(id(obj), obj)
            obj = getattr(obj, "fn", None)
            if obj is None:
                break
    return list(found.values())


@contextmanager
def pinned(tuner: Any, index: int) -> Iterator[None]:
    """Within the block, the autotuner holds only its config `index`: Triton launches that one and benchmarks nothing."""
    configs = getattr(tuner, "configs", None)
    if not isinstance(configs, list) or len(configs) <= 1:
        yield
        return
    tuner.configs = [configs[index]]
    try:
        yield
    finally:
        tuner.configs = configs


def freeze(tuners: Sequence[Any], indices: Sequence[int]) -> None:
    """Each autotuner pinned to its config of `indices` for the rest of the process."""
    for tuner, index in zip(tuners, indices):
        tuner.configs = [tuner.configs[index]]
