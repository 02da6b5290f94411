"""DSL backends: everything the ladder knows about one kernel language lives in one backend, registered by name.

A backend has two halves, because the ladder runs in two kinds of process:

- the parent half (`Backend`, this module's protocol), imported by the harness and the rungs: how the DSL shows
  itself in source (precheck), what its verdict can be on a CPU, what its compiler error looks like, which dump
  stages it writes, its version for the prompt;
- the worker half (`WorkerBackend`), imported inside the sandboxed worker only (no pydantic, no harness imports):
  compile capture (compile every kernel the entry launches without running it, and write its stages), the launch
  gate (count launches, make them no-ops on demand for the launch-dependence probe, mark launcher frames so the
  torch-compute trace does not blame the launcher's own ops), and what a worker pre-imports while it waits.

A new DSL is one module here (parent half), one `<name>_worker.py` (worker half) and its tasks. `dsl:` in a task
names the backend; `get(name)` fails with one line naming the registered ones.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable


@dataclass(frozen=True)
class Markers:
    """How a kernel of this DSL shows itself in source: the module it must import, and the decorators (or calls)
    of which at least one must appear (dotted or bare, as written)."""

    module: str
    decorators: tuple[str, ...]


@runtime_checkable
class Backend(Protocol):
    """The parent half of a DSL backend."""

    name: str
    """As a task's `dsl:` says it: "triton", "cute", "cuda", "tilelang"."""
    label: str
    """As a person says it: "Triton", "CuTe DSL"."""
    markers: Markers
    verifies_on_cpu: bool
    """True when the run and correctness rungs can execute the kernel without a GPU (Triton's interpreter). False:
    on a CPU the climb stops after compile and dumps with the verdict "compiled, not verified", never "pass"."""
    dump_suffixes: tuple[str, ...]
    """Suffixes of the files its compile capture writes under `compiled/` (taken back from the worker; the dumps
    rung copies them): e.g. ("ttir", "ttgir", "ll", "ptx", "cubin", "json")."""
    worker_module: str
    """Dotted module of the worker half, imported by the worker by name: "rungs.backends.triton_worker"."""
    # Optional (read with getattr, default ""): `sections_module`, the dotted module that finds a kernel's timing
    # regions and measures them (rungs/ladder/sections.py says what it provides); "" where the DSL has none yet.

    def version(self) -> str:
        """The installed DSL's version ("3.9.0"), or "not installed"."""
        ...

    def compile_message(self, error: str, source: str | None = None) -> str:
        """One line from the worker's compile error: the compiler's reason and, where it says, the kernel's line
        (`source`, the candidate file's text, where the DSL counts lines from a function: Triton)."""
        ...

    def worker_env(self, device: str) -> dict[str, str]:
        """Environment the worker needs for this DSL on this device (e.g. CUTE_DSL_ARCH=sm_90a on a CPU); the
        worker's scratch-relative cache folders are the worker's to set."""
        ...


@runtime_checkable
class WorkerBackend(Protocol):
    """The worker half: lives in the sandboxed worker process. Kept free of the harness's imports."""

    def preload(self, device: str) -> None:
        """Imports (and warm-up) a pre-started worker pays for before it takes its job."""
        ...

    def install_compile_capture(self, on_cuda: bool, launches: Any) -> Callable[[], None]:
        """Make every launch the entry makes compile without running, recording each compiled kernel on
        `launches` (rungs.worker.compile_phase.Launches: `.compiled.append((name, handle, shape))`, `.count += 1`,
        `.mark(bool)` around the compiler so a death there is blamed on the compiler). Returns an undo function."""
        ...

    def write_compiled(self, compiled: list[tuple[str, Any, list[Any]]], out_dir: Path) -> list[dict[str, Any]]:
        """Write each distinct compiled kernel's stages to out_dir as `<stem>.<suffix>` (one of dump_suffixes,
        `cubin` among them whenever there is a cubin, so SASS comes from cuobjdump) plus `<stem>.json` metadata.
        `compiled` is [(stem, handle, shapes it served)]. Returns one summary per kernel: name, num_warps,
        num_stages, shared_bytes (None where the DSL does not say)."""
        ...

    def install_launch_gate(self, gate: Any) -> None:
        """Wrap the DSL's launchers once, using the worker's gate (rungs/worker/launch_gate.py): call
        `gate.launched(handle, args, kwargs)` per real launch (counted and logged), return without launching while
        `gate.skip` is set (the launch-dependence probe), and run the launcher inside `gate.inside()` (the torch ops it
        makes are not the candidate's). Code objects of the wrappers go in `gate.launcher_codes`."""
        ...

    def before_run(self, on_cuda: bool) -> None:
        """Set-up before the run phase (Triton on a CPU: the interpreter's bfloat16 fix)."""
        ...


_REGISTRY: dict[str, str] = {
    "triton": "rungs.backends.triton:BACKEND",
    "cute": "rungs.backends.cute:BACKEND",
    "cuda": "rungs.backends.cuda:BACKEND",
    "tilelang": "rungs.backends.tilelang:BACKEND",
}
"""name -> "module:attribute" of its parent half, imported on first use (a CPU-only install need not have every
DSL). Add a DSL by adding a line here."""

_loaded: dict[str, Backend] = {}


class UnknownBackend(ValueError):
    pass


def names() -> list[str]:
    return sorted(_REGISTRY)


def register(name: str, target: str) -> None:
    """Add a backend at run time ("pkg.module:ATTR"); plugins and tests use this."""
    _REGISTRY[name] = target
    _loaded.pop(name, None)


def get(name: str) -> Backend:
    if name in _loaded:
        return _loaded[name]
    target = _REGISTRY.get(name)
    if target is None:
        raise UnknownBackend(f"unknown dsl {name!r}: expected one of {', '.join(names())}")
    module, _, attr = target.partition(":")
    backend = getattr(importlib.import_module(module), attr)
    _loaded[name] = backend
    return backend


def load_worker(module: str = "", name: str = "") -> WorkerBackend:
    """In the worker: the worker half (its module's WORKER). `module` is the module's name as the parent's backend gave
    it (`worker_module`, carried in the job and on a pre-started worker's command line, so a backend registered only in
    the parent still reaches the worker); where it is empty, the registered DSL `name`'s parent module + "_worker" (the
    layout every backend follows; the parent half is not imported: its dependencies are the parent's)."""
    if not module:
        target = _REGISTRY.get(name)
        if target is None:
            raise UnknownBackend(f"unknown dsl {name!r}: expected one of {', '.join(names())}")
        module = target.partition(":")[0] + "_worker"
    return importlib.import_module(module).WORKER  # type: ignore[no-any-return]
