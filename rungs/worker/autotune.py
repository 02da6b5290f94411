"""A candidate's declared config space, on the worker's side: found at import, compiled, pinned to one point.

A candidate declares a space one of two ways (harness/prompts/system.j2 tells the model):

- a module-level `CONFIGS = [dict(BLOCK=1024, num_warps=4), ...]` (any DSL): the harness calls the entry as
  `kernel(*inputs, **CONFIGS[k])`, so the entry takes each key as a keyword argument. CONFIGS[0] is the default.
- `@triton.autotune(configs=[triton.Config(...), ...], key=[...])`: the harness pins every autotuner to one of its
  configs (Triton then launches that config and times nothing itself); with several autotuned kernels the space is
  the product of their lists. configs[0] of each is the default.

One point of the space is chosen for every shape (the fastest over the sum of the bench shapes, rungs/worker/bench.py
tune_space); the run and bench phases judge that point, and nothing else. A CPU (Triton's interpreter) runs the
default. An autotuner the module does not expose (made inside a function) is pinned to its first config, so Triton's
own timing loop never runs in a worker, least of all inside a timed call. How a Triton autotuner is found, labelled
and pinned is the Triton backend's (rungs/backends/triton_autotune.py).
"""
from __future__ import annotations

import functools
import inspect
import itertools
import keyword
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from rungs.backends import triton_autotune
from rungs.core.fmt import pairs
from rungs.worker.launch_gate import base_name

MAX_CONFIGS = 64
"""Largest space the harness times: each point costs compiles and GPU seconds (the task's autotune_s)."""
PLAIN = (bool, int, float, str)


class SpaceError(ValueError):
    """The declared space is malformed: said in one line, as a compile failure."""


@dataclass
class Space:
    kind: str
    """"CONFIGS" or "triton.autotune"."""
    points: list[dict[str, Any]]
    """CONFIGS: the dicts. triton.autotune: {tuner index: config index}."""
    labels: list[str]
    tuners: list[Any] = field(default_factory=list)
    dropped: dict[int, str] = field(default_factory=dict)
    """Points other than the default that failed to build or run at the largest test shape (the compile phase): a tile
    past the registers or shared memory at this shape, as triton.autotune prunes. Never timed, never chosen; why, in
    one line each (the compile rung says it)."""

    def __len__(self) -> int:
        return len(self.points)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "configs": self.labels, "dropped": {str(k): v for k, v in self.dropped.items()}}


_state: dict[str, Any] = {"space": None, "choice": 0}


def current() -> Space | None:
    return _state["space"]


def choice() -> int:
    return int(_state["choice"])


def choose(index: int) -> None:
    _state["choice"] = index


@contextmanager
def chosen(index: int) -> Iterator[None]:
    """Within the block, point `index` is the one the entry runs."""
    saved = choice()
    choose(index)
    try:
        yield
    finally:
        choose(saved)


def _check_configs(configs: Any, entry: Callable[..., Any]) -> list[dict[str, Any]]:
    if not isinstance(configs, (list, tuple)) or not configs:
        raise SpaceError(f"CONFIGS must be a non-empty list of dicts, got {type(configs).__name__}")
    try:
        params = inspect.signature(entry).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    out = []
    for i, config in enumerate(configs):
        if not isinstance(config, dict):
            raise SpaceError(f"CONFIGS[{i}] is a {type(config).__name__}, not a dict of keyword arguments")
        for key, value in config.items():
            if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
                raise SpaceError(f"CONFIGS[{i}] has the key {key!r}: keys are the entry's keyword arguments")
            if not isinstance(value, PLAIN):
                raise SpaceError(f"CONFIGS[{i}][{key!r}] is a {type(value).__name__}: values must be int, float, "
                                 "bool or str (constexprs and launch options)")
            if params and not takes_any and key not in params:
                raise SpaceError(f"CONFIGS[{i}] sets {key}, which the entry does not take: the harness calls "
                                 f"it as entry(*inputs, **CONFIGS[k])")
        out.append(dict(config))
    return out


def discover(module: Any, entry: Callable[..., Any]) -> Space | None:
    """The module's declared space (None: it declares none); kept as this worker's space."""
    configs = getattr(module, "CONFIGS", None)
    tuners = triton_autotune.autotuners(module)
    space = None
    if configs is not None:
        if any(len(getattr(t, "configs", [])) > 1 for t in tuners):
            raise SpaceError("the module declares both CONFIGS and a @triton.autotune with several configs: "
                             "declare one space")
        points = _check_configs(configs, entry)
        space = Space("CONFIGS", points, [pairs(p) or "default" for p in points])
    else:
        tuners = [t for t in tuners if len(getattr(t, "configs", [])) > 1]
        if tuners:
            total = 1
            for t in tuners:
                total *= len(t.configs)
            if total > MAX_CONFIGS:
                raise SpaceError(f"the autotune space has {total} configs (the product of each autotuned kernel's "
                                 f"list); at most {MAX_CONFIGS} are timed")
            points = [dict(enumerate(ix)) for ix in itertools.product(*(range(len(t.configs)) for t in tuners))]
            many = len(tuners) > 1
            labels = ["; ".join((f"{base_name(t)}: " if many else "") + triton_autotune.config_label(t.configs[i])
                                for t, i in zip(tuners, p.values())) for p in points]
            space = Space("triton.autotune", points, labels, tuners)
    if space is not None and len(space) > MAX_CONFIGS:
        raise SpaceError(f"CONFIGS has {len(space)} entries; at most {MAX_CONFIGS} are timed")
    _state["space"] = space  # CONFIGS of one point still sets the entry's keyword arguments
    return space


def bound(entry: Callable[..., Any]) -> Callable[..., Any]:
    """The entry as the harness calls it at the chosen point: CONFIGS[k] as keyword arguments (autotuners are
    pinned where they launch: `pinned`)."""
    space = current()
    if space is None or space.kind != "CONFIGS":
        return entry
    return functools.partial(entry, **space.points[choice()])


@contextmanager
def pinned(tuner: Any) -> Iterator[None]:
    """Around one call of an autotuner (the launch gate's wrapper): it holds only the chosen config, so Triton
    launches that one and benchmarks nothing. An autotuner outside the declared space gets its first config."""
    index = 0
    space = current()
    if space is not None and space.kind == "triton.autotune":
        for j, t in enumerate(space.tuners):
            if t is tuner:
                index = space.points[choice()][j]
    with triton_autotune.pinned(tuner, index):
        yield


def freeze() -> None:
    """Pin the space's autotuners to the chosen point for the rest of the process (the profiler's target has no
    launch gate to pin them call by call)."""
    space = current()
    if space is None or space.kind != "triton.autotune":
        return
    triton_autotune.freeze(space.tuners, list(space.points[choice()].values()))
