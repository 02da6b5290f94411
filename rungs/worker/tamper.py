"""Tampering, watched in the candidate's own process: `arm()` snapshots, before the candidate is imported, the
functions and classes the harness relies on (timers and synchronization: torch.cuda.synchronize, torch.cuda.Event and
its methods, time.perf_counter, triton.testing.do_bench; and what the worker saves and compares with: torch.save,
Tensor methods, json, the worker's own functions...). `problems()` lists what changed since, plus trace hooks, torch
function/dispatch modes left active, threads and child processes the candidate started; `check()` raises them.

In-process checks are best effort: code running in this process can, with enough effort, undo any of them. The
static screen (rungs/ladder/static_checks.py) refuses the usual routes to that (gc, frames, ctypes, monkeypatching),
and what decides correctness (the references, the comparison) never enters this process.
"""
from __future__ import annotations

import os
import sys
import threading
import types
from pathlib import Path
from typing import Any

from rungs.worker import launch_gate

WORKER_MODULES = ("rungs.worker.loop", "rungs.worker.candidate", "rungs.worker.compile_phase", "rungs.worker.run_phase",
                  "rungs.worker.bench", "rungs.worker.tamper", "rungs.worker.launch_gate", "rungs.worker.hot_path",
                  "rungs.worker.calls", "rungs.worker.timed_calls", "rungs.timing.measure", "rungs.timing.devices",
                  "rungs.timing.inputs", "rungs.timing.fresh")
"""The worker's own modules whose functions it calls around candidate code: its loop and phases, these guards, and
the timing (the shared room's and the worker's timing phases). By name: a module not imported yet is not watched."""
WATCHED_MODULES = ("torch", "torch.nn.functional", "torch.cuda", "torch.serialization", "time", "json", "os",
                   "builtins", "pathlib", "triton", "triton.testing", "numpy", "__main__", *WORKER_MODULES)
TIMER_MODULES = ("rungs.timing", "rungs.worker.bench")
"""The timing's modules, whose functions replaced are timer tampering: the shared timing and the worker's timing
phases (the bench, witness and autotune loops)."""
UNWATCHED = frozenset({"torch.manual_seed"})
"""Names torch itself rebinds: importing torch._dynamo (torch.use_deterministic_algorithms and torch.compile do) wraps
torch.manual_seed. Nothing in the worker calls it."""
WATCHED_CLASSES = ("torch.Tensor", "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.CUDAGraph", "pathlib.Path",
                   "torch.autograd.grad_mode.no_grad")


class Tampered(RuntimeError):
    """The candidate changed the process the harness measures and checks in."""


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), attr)


def _class_entries(cls: type) -> dict[str, Any]:
    """Every attribute name of cls resolved along its MRO to the raw object (so a subclass override shows)."""
    out = {}
    for name in dir(cls):
        for klass in cls.__mro__:
            if name in vars(klass):
                out[name] = vars(klass)[name]
                break
    return out


def _module_entries(module: types.ModuleType) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items() if callable(v) or isinstance(v, types.ModuleType)}


class Snapshot:
    def __init__(self) -> None:
        import torch  # noqa: F401 - the watched objects must exist
        import triton.testing  # noqa: F401

        self.modules: dict[str, types.ModuleType] = {}
        self.entries: dict[str, Any] = {}
        for name in WATCHED_MODULES:
            module = sys.modules.get(name)
            if module is None:
                continue
            self.modules[name] = module
            for k, v in _module_entries(module).items():
                if f"{name}.{k}" not in UNWATCHED:
                    self.entries[f"{name}.{k}"] = v
        self.classes: dict[str, type] = {}
        for name in WATCHED_CLASSES:
            try:
                cls = _resolve(name)
            except (ImportError, AttributeError):
                continue
            self.classes[name] = cls
            for k, v in _class_entries(cls).items():
                self.entries[f"{name}.{k}"] = v
        self.threads = {t.ident for t in threading.enumerate()}

    def changed(self) -> list[str]:
        now: dict[str, Any] = {}
        swapped = [f"sys.modules[{name!r}]" for name, m in self.modules.items() if sys.modules.get(name) is not m]
        for name, module in self.modules.items():
            for k, v in _module_entries(module).items():
                now[f"{name}.{k}"] = v
        for name, cls in self.classes.items():
            for k, v in _class_entries(cls).items():
                now[f"{name}.{k}"] = v
        gone = object()
        return swapped + [k for k, v in self.entries.items() if now.get(k, gone) is not v]


_state: dict[str, Any] = {"snapshot": None}


def arm() -> None:
    """Snapshot what the harness relies on; call before the candidate is imported. The dlpack gate goes in first,
    so the snapshot holds it."""
    launch_gate.gate_dlpack()
    _state["snapshot"] = Snapshot()


def armed() -> bool:
    """True once arm() has run: the calls of the entry are then checked against a snapshot of their own."""
    return _state["snapshot"] is not None


def _children() -> list[int]:
    pids: list[int] = []
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            text = (task / "children").read_text().split()
            pids.extend(int(p) for p in text)
    except OSError:
        return []
    return pids


def problems(since: "Snapshot | None" = None) -> list[str]:
    """What the candidate changed since `since` (default: since `arm()`), each a phrase naming the trick."""
    out = []
    snap: Snapshot | None = since or _state["snapshot"]
    if snap is not None:
        changed = snap.changed()
        if changed:
            timers = [c for c in changed if _is_timer(c)]
            names = ", ".join((timers or changed)[:5]) + (f" (+{len(changed) - 5} more)" if len(changed) > 5 else "")
            what = "timer or synchronization tampering" if timers else "monkeypatching the harness's functions"
            out.append(f"the kernel replaced {names}: {what}")
        # The worker's own bench-input thread starts before arm(), so it is in every snapshot.
        started = [t for t in threading.enumerate() if t.ident not in snap.threads and t.is_alive()]
        if started:
            out.append(f"the kernel left {len(started)} thread(s) running ({started[0].name}): work off the timed path")
    gate = launch_gate.gate()
    for where in gate.replaced():
        out.append(f"the kernel replaced {gate.label}'s launcher ({where}): launches would go uncounted")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        out.append("the kernel installed a trace or profile hook (sys.settrace/setprofile)")
    try:
        import torch.overrides
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        if torch.overrides._get_current_function_mode_stack() or _get_current_dispatch_mode_stack():
            out.append("the kernel left a torch function or dispatch mode active: it would intercept the harness's "
                       "own tensor operations")
    except ImportError:  # pragma: no cover - private helpers of every supported torch
        pass
    overridden = _overridden_ops()
    if overridden:
        out.append(f"torch's {overridden} gives wrong answers: an operator override (torch.library) that would fool "
                   "the harness's own comparisons")
    kids = _children()
    if kids:
        out.append(f"the kernel started child process(es) {kids[:5]}: work in another process is neither timed "
                   "nor checked")
    return out


def _overridden_ops() -> str | None:
    """Canaries for the operators the worker compares with: an override registered for aten::equal (or clone)
    shows up as a wrong answer on tensors that differ."""
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() and torch.cuda.is_initialized() else [])
    for device in devices:
        a = torch.tensor([1, 2, 3], dtype=torch.uint8, device=device)
        b = torch.tensor([1, 2, 4], dtype=torch.uint8, device=device)
        if a.equal(b) or not a.equal(a.clone()):
            return f"aten::equal or aten::clone on {device}"
    return None


def _is_timer(name: str) -> bool:
    return name.startswith(("time.", "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Stream",
                            "torch.cuda.current_stream", "torch.cuda.CUDAGraph", "triton.testing",
                            "torch.cuda.graph", *TIMER_MODULES))


def check(where: str, since: "Snapshot | None" = None) -> None:
    found = problems(since)
    if found:
        raise Tampered(f"{where}: " + "; ".join(found))
