"""Guards the worker (rungs/worker/loop.py) keeps around candidate code, in the candidate's own process.

- Tampering: `arm()` snapshots, before the candidate is imported, the functions and classes the harness relies on
  (timers and synchronization: torch.cuda.synchronize, torch.cuda.Event and its methods, time.perf_counter,
  triton.testing.do_bench; and what the worker saves and compares with: torch.save, Tensor methods, json, the
  worker's own functions...). `problems()` lists what changed since, plus trace hooks, torch function/dispatch
  modes left active, threads and child processes the candidate started.
- Torch compute on the hot path: `watch()` runs the entry under a TorchDispatchMode that refuses aten ops other
  than allocation, views, copies and fills (unless the task allows torch compute), naming the op.
- Launch dependence: `install_launch_gate()` wraps Triton's launchers so that `launches_skipped()` turns every
  launch into a no-op; the worker re-runs one case that way and the parent checks the output no longer matches.
- A side stream not joined (CUDA): `Watch.returned()` copies the output on the caller's stream the moment the
  entry returns; `Watch.settled()` compares that copy with the output after a device-wide synchronize.
- Timed calls (`TimedCalls`): every call alike; which ones the parent checks is drawn after each returned, and their
  sampled outputs are saved for the parent, which rebuilds their fresh inputs and judges them itself.
- After timing: `after_bench()` runs the entry once more on the first correctness case (the parent compares it
  with the reference) and times the timing loop's own overhead on the host, for the wall-clock cross-check.

In-process checks are best effort: code running in this process can, with enough effort, undo any of them. The
static screen (rungs/ladder/static_checks.py) refuses the usual routes to that (gc, frames, ctypes, monkeypatching),
and what decides correctness (the references, the comparison) never enters this process. Kept free of the
harness's own imports, like rungs/worker/loop.py.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from rungs.worker.job import Job, sample_rows

OUTPUT_BYTES_FACTOR = 16
"""An output may be at most this many times the expected output's bytes (rungs/ladder/cases.py writes the limit)."""

# ---- tampering -----------------------------------------------------------------------------------------------
WATCHED_MODULES = ("torch", "torch.nn.functional", "torch.cuda", "torch.serialization", "time", "json", "os",
                   "builtins", "pathlib", "triton", "triton.testing", "numpy", "__main__", "rungs.worker.guards",
                   "rungs.timing", "rungs.worker.loop")
UNWATCHED = frozenset({"torch.manual_seed"})
"""Names torch itself rebinds: importing torch._dynamo (which torch.use_deterministic_algorithms does) wraps
torch.manual_seed. Nothing in the worker calls it."""
WATCHED_CLASSES = ("torch.Tensor", "torch.cuda.Event", "torch.cuda.Stream", "torch.cuda.CUDAGraph", "pathlib.Path",
                   "torch.autograd.grad_mode.no_grad")


class Tampered(RuntimeError):
    """The candidate changed the process the harness measures and checks in."""


class TorchComputeRefused(RuntimeError):
    """The entry computed with torch ops on the hot path, which the task does not allow."""


class OutputTooLarge(RuntimeError):
    """An output far larger than the task's: refused before it is copied or saved."""


class SideStreamNotJoined(RuntimeError):
    """The output was still being written when the entry returned."""


GUARD_ERRORS = (Tampered, TorchComputeRefused, OutputTooLarge, SideStreamNotJoined)


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


class _Snapshot:
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
    _gate_dlpack()
    _state["snapshot"] = _Snapshot()


def _children() -> list[int]:
    pids: list[int] = []
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            text = (task / "children").read_text().split()
            pids.extend(int(p) for p in text)
    except OSError:
        return []
    return pids


def problems(since: "_Snapshot | None" = None) -> list[str]:
    """What the candidate changed since `since` (default: since `arm()`), each a phrase naming the trick."""
    out = []
    snap: _Snapshot | None = since or _state["snapshot"]
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
    for where in _gate.replaced():
        out.append(f"the kernel replaced {_gate.label}'s launcher ({where}): launches would go uncounted")
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
                            "torch.cuda.graph", "rungs.timing"))


def check(where: str, since: "_Snapshot | None" = None) -> None:
    found = problems(since)
    if found:
        raise Tampered(f"{where}: " + "; ".join(found))


# ---- launches ----------------------------------------------------------------------------------------------
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


def _describe_arg(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor {str(value.dtype).replace('torch.', '')} {list(value.shape)} stride {list(value.stride())}"
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    inner = getattr(value, "value", None)  # tl.constexpr
    if isinstance(inner, (bool, int, float, str)):
        return inner
    if isinstance(value, (tuple, list)):
        return [_describe_arg(v) for v in value]
    return type(value).__name__


def _base_name(obj: Any) -> str:
    fn = obj
    for _ in range(8):  # autotune(heuristics(jit(fn))): the candidate's function at the bottom
        inner = getattr(fn, "fn", None)
        if inner is None:
            break
        fn = inner
    return getattr(fn, "__name__", type(obj).__name__)


def _jit_globals(obj: Any) -> dict[str, Any]:
    """The plain values (constexpr globals, numbers, strings) a kernel and the jit functions it calls read from their
    modules: Triton folds them into the build like constexprs, so they are part of what was launched."""
    out: dict[str, Any] = {}
    todo, seen = [obj], set()
    while todo and len(seen) < 64:
        fn = todo.pop()
        for _ in range(8):  # down to the Python function
            if getattr(fn, "fn", None) is None:
                break
            fn = fn.fn
        code = getattr(fn, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        space = getattr(fn, "__globals__", {})
        for name in code.co_names:
            value = space.get(name)
            if hasattr(value, "fn") and hasattr(value, "run"):  # a jit function it calls
                todo.append(value)
                continue
            plain = value if isinstance(value, (bool, int, float, str)) else getattr(value, "value", None)
            if isinstance(plain, (bool, int, float, str)) and not isinstance(value, type):
                out[f"{getattr(fn, '__name__', '?')}.{name}"] = plain
    return out


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
    _log["calls"].append({"kernel": _base_name(obj), "autotuned": autotuner,
                          "args": [_describe_arg(a) for a in args],
                          "kwargs": {k: _describe_arg(v) for k, v in sorted(named.items())},
                          "grid": _describe_arg(grid) if grid is not None else None, "globals": _jit_globals(obj)})


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


def install_launch_gate(backend: Any) -> None:
    """Have the backend wrap its DSL's launchers (once per process)."""
    if _gate.installed:
        return
    backend.install_launch_gate(_gate)
    _gate.label = getattr(backend, "label", _gate.label)


def _gate_dlpack() -> None:
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


# ---- torch compute on the hot path ----------------------------------------------------------------------------
ALLOWED_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones ones_like new_ones
full full_like new_full fill_ zero_ arange linspace scalar_tensor lift_fresh lift_fresh_copy
view _unsafe_view reshape _reshape_alias as_strided as_strided_ transpose transpose_ t t_ permute expand expand_as
unsqueeze unsqueeze_ squeeze squeeze_ select slice narrow alias detach detach_ unbind split split_with_sizes chunk
tensor_split view_as unflatten flatten movedim diagonal unfold
clone contiguous copy_ _to_copy to _copy_from _copy_from_and_resize resize_ set_ cat stack constant_pad_nd
_local_scalar_dense sym_size sym_stride sym_numel sym_storage_offset is_same_size record_stream _pin_memory
_has_compatible_shallow_copy_type
""".split())
"""aten ops an honest launcher makes: allocations and constant fills, views, layout copies, scalar reads."""


def _trace_mode(allowed: frozenset[str], refused: list[str]) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode

    class HotPathTrace(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # True wraps __torch_dispatch__ through torch._dynamo: a 1.4 s import, per worker

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if not candidate_context():
                return func(*args, **(kwargs or {}))
            namespace, _, name = func._schema.name.partition("::")
            if namespace != "aten" or name not in allowed:
                refused.append(f"{namespace}.{name}")
                raise TorchComputeRefused(_refusal(refused))
            out = func(*args, **(kwargs or {}))
            if name in _COPIES and _to_host(args, kwargs, out):
                refused.append(f"a device-to-host copy (aten.{name})")
                raise TorchComputeRefused(_host_refusal(refused[-1]))
            return out

    return HotPathTrace()


_COPIES = frozenset({"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "to", "_pin_memory"})


def _to_host(args: Any, kwargs: Any, out: Any) -> bool:
    """A copy from device memory into host memory: the input's values where Python and numpy can compute on them."""
    import torch

    def tensors(x: Any) -> list[Any]:
        if isinstance(x, torch.Tensor):
            return [x]
        if isinstance(x, (list, tuple)):
            return [t for v in x for t in tensors(v)]
        return []

    src = [t for t in tensors(list(args)) + tensors(list((kwargs or {}).values())) if t.device.type != "cpu"]
    dst = [t for t in tensors(out) + tensors(list(args[:1])) if t.device.type == "cpu"]
    return bool(src) and bool(dst)


HOST_READS = frozenset({"numpy", "tolist", "__array__", "__array_wrap__", "__dlpack__", "untyped_storage", "storage",
                        "_typed_storage", "cpu", "__reduce_ex__", "__getstate__", "__repr__", "__str__",
                        "__format__", "apply_", "map_", "map2_", "to_dlpack"})
"""Tensor methods that hand a tensor's values to the host (numpy, Python lists, raw storage bytes, text): the routes
host compute takes, which the aten trace does not see."""
SCALAR_READS = frozenset({"item", "__float__", "__int__", "__index__", "__bool__", "__complex__"})
MAX_SCALAR_READS = 64
"""An honest launcher reads a few scalars (a flag, a count); more than this in one call is a computation on the
host, element by element."""


def _host_refusal(what: str) -> str:
    return (f"the entry read tensor values on the host ({what}): host compute (numpy, Python) on the hot path is "
            "refused; the task must be computed by its DSL kernels")


def _host_mode(refused: list[str]) -> Any:
    from torch.overrides import TorchFunctionMode

    reads = [0]

    class HostReads(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            name = getattr(func, "__name__", "")
            if name in HOST_READS or name in SCALAR_READS:
                if candidate_context():
                    if name in HOST_READS:
                        refused.append(f"Tensor.{name}")
                        raise TorchComputeRefused(_host_refusal(f"Tensor.{name}"))
                    reads[0] += 1
                    if reads[0] > MAX_SCALAR_READS:
                        refused.append(f"Tensor.{name}")
                        raise TorchComputeRefused(_host_refusal(f"more than {MAX_SCALAR_READS} scalar reads "
                                                                f"(Tensor.{name}) in one call"))
            return func(*args, **(kwargs or {}))

    return HostReads()


def _refusal(refused: list[str]) -> str:
    return (f"torch computed {refused[0]} on the hot path: the task must be computed by its DSL kernels "
            "(allocations, views and copies are all torch may do here)")


class Watch:
    """One call of the entry: the torch-op trace, then the tamper checks; on CUDA, `settled` synchronizes."""

    def __init__(self, allow_torch_compute: bool, on_cuda: bool) -> None:
        self.allow = allow_torch_compute
        self.on_cuda = on_cuda
        self.refused: list[str] = []
        self.stream: Any = None
        self.flags: tuple[bool, bool] | None = None
        self.early: list[Any] = []

    def __enter__(self) -> "Watch":
        import torch

        self.flags = _determinism()
        # Compared with the state at entry, not at arm(): the worker's own determinism re-run swaps torch.empty.
        self.before = _Snapshot() if _state["snapshot"] is not None else None
        if self.on_cuda:
            self.stream = torch.cuda.current_stream()
        self.host = None if self.allow else _host_mode(self.refused)
        self.mode = None if self.allow else _trace_mode(ALLOWED_OPS, self.refused)
        if self.host is not None:
            self.host.__enter__()
        if self.mode is not None:
            self.mode.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.mode is not None:
            self.mode.__exit__(exc_type, exc, tb)
        if self.host is not None:
            self.host.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return
        if self.refused:  # the candidate caught the refusal and carried on
            first = self.refused[0]
            raise TorchComputeRefused(_host_refusal(first) if first.startswith(("Tensor.", "a device-to-host"))
                                      else _refusal(self.refused))
        if _determinism() != self.flags:
            raise Tampered("the kernel turned off deterministic mode or torch.utils.deterministic."
                           "fill_uninitialized_memory: the NaN poison that shows unwritten outputs")
        if self.before is not None:
            check("during a call of the entry", self.before)

    def returned(self, outputs: list[Any]) -> list[Any]:
        """Called the moment the entry returns, inside the `with`: on CUDA, copies the outputs on the caller's
        stream at once. The tamper checks on exit take milliseconds of host time, long enough for work on a side
        stream to finish before a later copy (seen on the H200: a 20000-step spin went unnoticed)."""
        if self.on_cuda:
            import torch

            with torch.cuda.stream(self.stream):  # the caller's stream, even if the entry switched streams
                self.early = [o.clone() if type(o) is torch.Tensor and o.is_cuda else None for o in outputs]
        return outputs

    def settled(self, outputs: list[Any]) -> None:
        """On CUDA: the outputs as the caller's stream saw them when the entry returned must be final."""
        if not self.on_cuda:
            return
        import torch

        torch.cuda.synchronize()
        for i, (a, o) in enumerate(zip(self.early, outputs)):
            if a is not None and not same_bits(a, o):
                raise SideStreamNotJoined(
                    f"output {i} was still being written after the entry returned: work on a side stream that the "
                    "caller's stream does not wait for (join it with current_stream().wait_stream(side))")


def watch(job: Job, on_cuda: bool) -> Watch:
    return Watch(job.allow_torch_compute, on_cuda)


def call_entry(fn: Callable[..., Any], inputs: list[Any], job: Job, on_cuda: bool,
               max_output_bytes: int | None) -> list[Any]:
    """One guarded call of the entry: the torch-op trace and tamper checks around it, then (CUDA) the side-stream
    check, then the output size limit. Returns the outputs."""
    import torch

    with torch.no_grad(), watch(job, on_cuda) as w:
        outputs = w.returned(as_outputs(fn(*inputs)))  # CUDA: copied at once, for settled()
    w.settled(outputs)  # CUDA: synchronizes, then refuses an output a side stream was still writing
    check_output_size(outputs, max_output_bytes)
    return outputs


def save_outputs(outputs: list[Any], path: Path) -> None:
    """Copied to the CPU for the parent to compare; anything but a plain tensor is saved as None (the parent
    refuses it from the run phase's description of the outputs)."""
    import torch

    torch.save([o.detach().to("cpu").clone() if type(o) is torch.Tensor else None for o in outputs], path)


def _determinism() -> tuple[bool, bool]:
    import torch
    import torch.utils.deterministic

    return torch.are_deterministic_algorithms_enabled(), bool(torch.utils.deterministic.fill_uninitialized_memory)


def as_outputs(result: Any) -> list[Any]:
    """The entry's result as a list of outputs (a tuple or list is several)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def same_bits(a: Any, b: Any) -> bool:
    import torch

    if not isinstance(a, torch.Tensor):
        return True
    return a.reshape(-1).contiguous().view(torch.uint8).equal(b.reshape(-1).contiguous().view(torch.uint8))


# ---- outputs -------------------------------------------------------------------------------------------------
def check_output_size(outputs: list[Any], limit: int | None) -> None:
    """Refuse an output far larger than expected before it is copied or saved (a view of a huge tensor counts
    at its own size; an expanded one at its logical size, which the copy would allocate)."""
    import torch

    if not limit:
        return
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            nbytes = o.numel() * o.element_size()
            if nbytes > limit:
                raise OutputTooLarge(f"output {i} has shape {list(o.shape)} ({_human(nbytes)}), over "
                                     f"{OUTPUT_BYTES_FACTOR}x the expected output ({_human(limit)} allowed): "
                                     "refused before copying or saving it")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


# ---- checked calls among the timed ones ------------------------------------------------------------------------
@contextmanager
def light_watch(job: Job) -> Iterator[None]:
    """The torch-op trace and the host-read refusal, without the tamper snapshot (milliseconds of host time that,
    inside a timed call, would make a checked call slower than the others); the snapshot is compared after the
    timed loop (after_bench)."""
    if job.allow_torch_compute:
        yield
        return
    refused: list[str] = []
    host, mode = _host_mode(refused), _trace_mode(ALLOWED_OPS, refused)
    with host, mode:
        yield
    if refused:  # the candidate caught a refusal and carried on
        first = refused[0]
        raise TorchComputeRefused(_host_refusal(first) if first.startswith(("Tensor.", "a device-to-host"))
                                  else _refusal(refused))


def poison(outputs: list[Any], inputs: Sequence[Any]) -> None:
    """Fill outputs with NaN (integers with 0x5A) before they go back to the allocator, so the next call's fresh
    output memory most likely holds the poison: elements a call leaves unwritten show, instead of an earlier call's
    right answer. An output that aliases an input is left alone."""
    for o in poisonable(outputs, inputs):
        o.fill_(poison_value(o))


def poisonable(outputs: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
    """The outputs poison() fills (detached): non-empty tensors that share no storage with an input."""
    import torch

    ptrs = {v.untyped_storage().data_ptr() for v in inputs if isinstance(v, torch.Tensor)}
    return [o.detach() for o in outputs
            if type(o) is torch.Tensor and o.numel() and o.untyped_storage().data_ptr() not in ptrs]


def poison_value(o: Any) -> float | int:
    return float("nan") if o.is_floating_point() else 0x5A


class TimedCalls:
    """The worker's side of bench-shape correctness, for one bench shape (timing.measure calls it around every call).

    The first call sees the bench inputs as made; it runs under the torch-op trace and its outputs are saved whole,
    for the parent to compare with its cached reference at the bench shape. Every later call sees fresh input values
    (timing.fresh_values) and is made the same way: no trace, no flag, no argument tells one from another. Only
    once a call has returned and its sample has ended is it decided, from a generator seeded here from os.urandom,
    whether it is one the parent checks (timing.checked_calls: about log2(n) of n calls, spread to the end); the
    outputs of every call are then sampled the same way (rows drawn at random on the device, job.sample_rows),
    and the sample kept only for the calls picked, so neither the call nor the time after it shows a pick. At the
    end the picked samples are written, one file each; the parent rebuilds those calls' inputs from its seed,
    computes its own reference and compares the rows (rungs/ladder/bench_reference.verify_picks). Nothing this object
    decides is evidence: the parent counts the picks, bounds every file and judges only what it recomputes."""

    def __init__(self, job: Job, bench_id: str, job_dir: Path, save: bool = True) -> None:
        import random

        import torch

        from rungs.timing import checked_calls

        self.job, self.bench_id, self.job_dir = job, bench_id, job_dir
        self.save = save
        """False while autotuning: nothing is written (points other than the winner are not judged at bench
        shapes; the winner is, in the bench phase)."""
        self.rng = random.Random(os.urandom(16))
        self.plan = checked_calls(self.rng)
        self.next = next(self.plan)
        self.rows = torch.Generator(device="cuda" if job.device == "cuda" else "cpu")
        self.rows.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self.graph: list[list[Any]] = []
        self._poison_groups: list[tuple[list[Any], float | int]] = []  # set with the graph (graph_outputs)
        self._poison_each: list[Any] = []
        self.kept: list[tuple[int, int, list[Any]]] = []
        self.report: dict[str, Any] = {"first": None, "picks": [], "no_launch": []}

    def _picked(self, i: int) -> bool:
        while self.next < i:
            self.next = next(self.plan)
        return i == self.next

    def call(self, dev: Any, fn: Callable[..., Any], args: Sequence[Any], i: int) -> Any:
        before = launch_count()
        if i == 0:  # the first call is known to be judged whatever is done here: traced
            with light_watch(self.job):
                out = dev.call(fn, args)
        else:
            out = dev.call(fn, args)
        if launch_count() == before:
            self.report["no_launch"].append(i)
        return out

    def after(self, out: Any, args: Sequence[Any], i: int) -> None:
        import torch

        outputs = as_outputs(out)
        if i == 0:
            if self.save:
                name = f"out-{self.bench_id}-first.pt"
                size = sum(o.numel() * o.element_size() for o in outputs if type(o) is torch.Tensor)
                # Whole up to job.first_full_bytes, else a sample of rows (the parent expects which from its own
                # reference's size): tens of GB would not go through a file.
                save_outputs(outputs if size <= self.job.first_full_bytes else self._rows(outputs), self.job_dir / name)
                self.report["first"] = name
        else:
            self._sample(outputs, i, 0)
        poison(outputs, args)

    def _sample(self, outputs: list[Any], i: int, slot: int) -> None:
        """Rows of every output drawn at random, gathered on the device: the same work for every call; kept when the
        call is picked (decided here, after the call)."""
        picked = self._picked(i)
        parts = self._rows(outputs)
        if picked:
            self.kept.append((i, slot, parts))

    def _rows(self, outputs: list[Any]) -> list[Any]:
        """[each output's sampled rows..., each output's row indices...] (job.sample_rows rows each)."""
        import torch

        parts: list[Any] = []
        rows: list[Any] = []
        for o in outputs:
            if type(o) is not torch.Tensor:
                parts.append(None)
                continue
            flat = o.reshape(1) if o.dim() == 0 else o
            n = sample_rows(tuple(flat.shape))
            r = torch.randint(0, max(flat.shape[0], 1), (n,), generator=self.rows, device=flat.device)
            parts.append(flat.index_select(0, r) if flat.shape[0] else flat)
            rows.append(r)
        return parts + rows

    def graph_outputs(self, outputs: list[Any], sets: list[list[Any]]) -> None:
        """The replay's outputs (the graph's own buffers, the same every replay) and what before_replay poisons: each
        output once, not one that is an input (as poison() does), worked out here once rather than per replay."""
        import torch

        self.graph = [as_outputs(o) for o in outputs]
        todo = {(o.data_ptr(), tuple(o.shape), o.stride(), o.dtype): o
                for o in poisonable([o for outs in self.graph for o in outs], [v for s in sets for v in s])}
        # contiguous outputs together (a multi-tensor op refuses a tensor whose elements share memory: an expanded one)
        plain = [o for o in todo.values() if o.is_contiguous() and o.dtype is not torch.bool]
        floats, ints = [o for o in plain if o.is_floating_point()], [o for o in plain if not o.is_floating_point()]
        self._poison_groups = [(g, poison_value(g[0])) for g in (floats, ints) if g]
        chosen = {id(o) for o in plain}
        self._poison_each = [o for o in todo.values() if id(o) not in chosen]

    def before_replay(self) -> None:
        """Every replay's outputs to the poison, in two multi-tensor launches per kind rather than one fill per
        output: a replay holds up to a thousand calls, and this runs before each (outside the timed region)."""
        import torch

        for group, value in self._poison_groups:
            torch._foreach_zero_(group)
            torch._foreach_add_(group, value)
        for o in self._poison_each:
            o.fill_(poison_value(o))

    def after_replay(self, i: int) -> None:
        """One call of the replay, drawn after it, sampled (and kept when the replay is picked): its inputs were its
        own buffers' (slot j of timing.call_seed)."""
        if self.graph:
            j = self.rng.randrange(len(self.graph))
            self._sample(self.graph[j], i, j)

    def finish(self) -> None:
        """The picked calls' samples, one file each, with the call and input slot the parent rebuilds them from."""
        for i, slot, parts in self.kept:
            name = f"out-{self.bench_id}-pick{i}.pt"
            if self.save:
                save_outputs(parts, self.job_dir / name)
            self.report["picks"].append({"call": i, "slot": slot, "file": name if self.save else None})
        self.kept.clear()


# ---- after timing --------------------------------------------------------------------------------------------
def after_bench(fn: Callable[..., Any], job: Job, job_dir: Path, on_cuda: bool,
                cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Once the bench shapes are timed: the tamper check, the host overhead of one timing sample (for the
    parent's wall-clock cross-check), and the entry once more on the job's `recheck` case (inputs of a test
    shape never seen before), in the timed calls' state, saved as out-<id>-after-bench.pt for the parent to
    compare with the reference."""
    import torch
    import torch.utils.deterministic

    check("after timing")
    reps = max((c.get("reps", 0) for c in cases), default=0)
    idle_us = host_idle_sample_us(job, reps) if reps else None
    for c in cases:
        c["host_idle_us"] = idle_us
    extra: dict[str, Any] = {}
    first = job.recheck
    if first is not None:
        device = "cuda" if on_cuda else "cpu"
        inputs = [v.to(device) if isinstance(v, torch.Tensor) else v
                  for v in torch.load(job_dir / first["inputs"], weights_only=True)]
        # In the timed calls' state (rungs/timing.bench_entry), not the run phase's: switching deterministic mode
        # back on here would tell the kernel this call is judged.
        outputs = call_entry(fn, inputs, job, on_cuda, first.get("max_output_bytes"))
        name = f"out-{first['id']}-after-bench.pt"
        save_outputs(outputs, job_dir / name)
        extra["recheck"] = {"id": first["id"], "file": name}
    return extra


def host_idle_sample_us(job: Job, reps: int) -> float:
    """Host wall time of one timing sample with nothing launched (flush, events, device-wide sync, the stopping
    rule's statistics), by the host clock: what a sample costs beyond the timed call."""
    from rungs import timing

    cfg = timing.TimingConfig.from_dict(job.timing)
    dev = timing.device_for(job.device, cfg)
    n = max(5, min(reps, 300))
    fixed = timing.TimingConfig(**{**cfg.as_dict(), "min_reps": n, "max_reps": n, "rel_se": -1.0, "cap_s": 60.0})

    def idle() -> float:
        dev.flush()
        a = dev.mark(0)
        b = dev.mark(1)
        dev.sync()
        c = dev.mark(2)
        dev.wait(c)
        dev.us(a, b), dev.us(b, c)
        return dev.us(a, c)

    t0 = time.perf_counter()
    samples, _ = timing.collect(idle, fixed)
    seconds = time.perf_counter() - t0
    dev.release()
    return seconds * 1e6 / len(samples)
