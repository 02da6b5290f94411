"""The launch gate, in the candidate's process: what each backend's wrapped launchers report to (`Gate`), the log of
what was launched as the candidate asked for it (compared between the compile and the run phase by the parent), the
launch-dependence probe's no-op launches (`launches_skipped`), and where a torch op is the candidate's to answer for
(`candidate_context`: outside the DSL's launchers, or called back from the candidate's own code).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from rungs.worker.launch_args import describe, jit_globals, jit_name, snapshot


class Gate:
    """What a backend's launch gate (WorkerBackend.install_launch_gate) reports to and asks: one per worker.

    The backend wraps its DSL's launchers; each wrapper calls `launched()` for a real launch (logged, and counted
    unless `skip`), returns without launching while `skip` is set (the launch-dependence probe), runs the launcher
    inside `inside()` (the torch ops the launcher itself makes are not the candidate's), and names itself in
    `launcher_codes` and, through `watch_launcher`, where it sits (replacing it is tampering)."""

    def __init__(self) -> None:
        self.skip = False
        self.depth = 0
        """>0 inside a launcher: the torch ops the launcher itself makes are not the candidate's."""
        self.launches = 0
        """Kernel launches made (not skipped, not warm-up compiles): a case with none was computed elsewhere."""
        self.launcher_codes: set[Any] = set()
        """The code of the gate's wrappers: the boundary between the candidate's code and the DSL's launcher."""
        self.installed: list[tuple[Any, str, Any]] = []
        """(owner, attribute, wrapper) of every wrapped launcher."""
        self.label = "the DSL"
        self.own_reads: dict[str, frozenset[Any]] | None = None
        """Set by a backend whose launchers were traced to make no torch op but allocations, views, copies and fills
        (Triton's): the host reads they make, each with the code objects of the library functions that make it.
        Inside such a launcher every other op is judged as the candidate's, whatever frames lie between: a callback
        of the candidate's built from library callables holds no frame of its file (`judged`)."""

    def launched(self, handle: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """One real launch the candidate asked for: logged; counted unless the launches are being skipped."""
        note_launch(handle, args, kwargs, autotuner=False)
        if not self.skip:
            self.launches += 1

    def note(self, handle: Any, args: tuple[Any, ...], kwargs: dict[str, Any], autotuner: bool = False) -> None:
        """Log without counting: an autotuner's call (its configs' launches are counted one by one), or a compile
        phase's launch that compiles instead (compared with the run phase's)."""
        note_launch(handle, args, kwargs, autotuner)

    def autotuning(self) -> Any:
        """Around an autotuner's own trial launches, which differ between builds: not logged."""
        return autotuning()

    @contextmanager
    def inside(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def watch_launcher(self, owner: Any, attr: str, wrapper: Any) -> None:
        setattr(owner, attr, wrapper)
        self.installed.append((owner, attr, wrapper))
        self.launcher_codes.add(wrapper.__code__)

    def replaced(self) -> list[str]:
        """Launchers the candidate put back or replaced since the gate went in: their launches would go uncounted."""
        return [f"{getattr(owner, '__name__', owner)}.{attr}" for owner, attr, wrapper in self.installed
                if getattr(owner, attr, None) is not wrapper]


_gate = Gate()


def gate() -> Gate:
    return _gate


def launch_count() -> int:
    return _gate.launches


# ---- what was launched, as the candidate asked for it ---------------------------------------------------------
_log: dict[str, Any] = {"calls": None, "autotuning": 0}
"""`calls`: the launches of the current call of the entry (None: not recording). `autotuning` > 0 inside an
autotuner, whose own trial launches differ between builds (it compiles every config, the interpreter runs one)."""


def start_launch_log() -> None:
    _log["calls"] = []


def take_launch_log() -> list[dict[str, Any]]:
    calls, _log["calls"] = _log["calls"] or [], None
    return calls


base_name = jit_name
"""The kernel's name: autotune(heuristics(jit(fn))) down to the candidate's function (rungs/worker/autotune.py)."""


def note_launch(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], autotuner: bool) -> None:
    """Record one launch the candidate asked for: kernel, arguments, constexprs and launch options, and the grid.
    The compile phase (the sm_90a build) and the run phase (the interpreter on a CPU) each record theirs, and the
    parent compares them: a kernel that tells the two apart would be judged on code the GPU never runs."""
    if _log["calls"] is None or _log["autotuning"]:
        return
    named = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
    grid = kwargs.get("grid")
    if callable(grid) and not autotuner:
        try:  # what Triton does with a grid function: call it with the bound arguments
            grid = grid({**dict(zip(getattr(obj, "arg_names", []), args)), **named})
        except Exception:  # noqa: BLE001 - the launch itself will raise it
            grid = "a grid function"
    elif callable(grid):  # an autotuner's: called per config, with the config's meta (host code, alike in both)
        grid = "a grid function"
    handed = [v.value if type(v) is snapshot().constexpr else v for v in [*args, *named.values()]]
    _log["calls"].append({"kernel": base_name(obj), "autotuned": autotuner, "launcher": describe(obj),
                          "args": [describe(a) for a in args],
                          "kwargs": {k: describe(v) for k, v in sorted(named.items())},
                          "grid": describe(grid) if grid is not None else None,
                          "globals": jit_globals(obj, *handed)})  # the jit functions it is handed read globals too


@contextmanager
def autotuning() -> Iterator[None]:
    _log["autotuning"] += 1
    try:
        yield
    finally:
        _log["autotuning"] -= 1


_candidate: dict[str, str | None] = {"file": None}


def set_candidate(path: str) -> None:
    """The candidate's file: its code is traced wherever it runs, also when Triton's launcher calls it."""
    _candidate["file"] = str(Path(path).resolve())


def candidate_context() -> bool:
    """True where a torch op is the candidate's to answer for: outside the DSL's launchers, or inside one but called
    from the candidate's own code (a @triton.heuristics callback, an autotune pre_hook/post_hook or Config
    pre_hook, prune_configs_by or perf_model, a grid function). The launcher's own ops (the interpreter's copies,
    the autotuner's timing) are not: between them and the launcher's entry no frame of the candidate's file."""
    if _gate.depth == 0:
        return True
    path = _candidate["file"]
    if path is None:
        return False
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code in _gate.launcher_codes:
            return False
        if code.co_filename == path:
            return True
        frame = frame.f_back
    return False


def judged() -> bool:
    """True where a torch op is judged by the candidate's rules: in its context (candidate_context), and anywhere
    inside a launcher that declares its own reads (Gate.own_reads). A red team (2026-12-05) gave an autotune Config
    `pre_hook=functools.partial(next, map(torch.relu, ...))`: only C callables between Triton's autotuner and the op,
    no frame of the candidate's file, so the op counted as the launcher's, and torch computed the answer."""
    return candidate_context() or _gate.own_reads is not None


def own_read(name: str) -> bool:
    """A host read the launcher itself makes (Triton's interpreter taking a tensor's storage to the host): inside a
    launcher, with no frame of the candidate's file between, made by one of the functions Gate.own_reads names for
    it (the nearest frame outside torch). By function, not by file: the interpreter's file also calls the
    candidate's grid function and pre-run hooks, and a hook of C callables called from there read the input's
    storage and computed the softmax on the host (red team, 2026-12-05, `interpreter_prerun_storage.py`)."""
    codes = (_gate.own_reads or {}).get(name)
    if not codes or _gate.depth == 0 or candidate_context():
        return False
    frame = sys._getframe(2)
    while frame is not None and _TORCH in frame.f_code.co_filename:
        frame = frame.f_back
    return frame is not None and frame.f_code in codes


_TORCH = "/torch/"
"""Frames of torch's own Python (its Tensor methods, the overrides machinery) between an op and its caller."""


def install_launch_gate(backend: Any) -> None:
    """Have the backend wrap its DSL's launchers (once per process)."""
    if _gate.installed:
        return
    snapshot()  # what a launch may take, fixed before the candidate's code runs (rungs/worker/launch_args.py)
    backend.install_launch_gate(_gate)
    _gate.label = getattr(backend, "label", _gate.label)


def gate_dlpack() -> None:
    """torch.utils.dlpack.to_dlpack is a C function the TorchFunctionMode does not see: a capsule of it handed to
    numpy (np.from_dlpack of an object whose __dlpack__ returns it) reads the tensor on the host. Wrapped once, before
    the candidate is imported, so that it goes through the mode like the other host reads."""
    import torch
    import torch.utils.dlpack as dlpack
    from torch.overrides import handle_torch_function, has_torch_function_unary

    original = dlpack.to_dlpack
    if getattr(original, "__gated__", False):
        return

    def to_dlpack(tensor: Any) -> Any:
        if has_torch_function_unary(tensor):
            return handle_torch_function(to_dlpack, (tensor,), tensor)
        return original(tensor)

    to_dlpack.__gated__ = True  # type: ignore[attr-defined]
    dlpack.to_dlpack = to_dlpack
    if getattr(torch, "to_dlpack", None) is original:
        torch.to_dlpack = to_dlpack


@contextmanager
def launches_skipped() -> Iterator[None]:
    """Every launch through the gate in the block returns at once without running."""
    _gate.skip = True
    try:
        yield
    finally:
        _gate.skip = False
