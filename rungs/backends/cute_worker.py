"""The CuTe DSL backend's worker half: compile capture and the launch gate, inside the sandboxed worker.

How nvidia-cutlass-dsl 4.8.1 compiles and runs (what is wrapped here, all classes of the installed wheel):

- `cute.compile(f, *args)` is `CompileCallable._compile`, which calls the DSL object's `BaseDSL._func(f, *args,
  compile_only=True, no_cache=True)`; a direct call of a `@cute.jit` function is `BaseDSL._func(f, *args)` (via its
  jit wrapper), which compiles (or hits the JIT cache) and then runs. Both go through `BaseDSL.generate_mlir`, which
  returns the `JitCompiledFunction` when `compile_only`, and otherwise calls its `run_compiled_program`.
  A `@cute.jit` called while another is being traced is inlined (`_func` sees a live MLIR insertion point).
- Calling a `JitCompiledFunction` converts the arguments (`execution_args`) and calls `run_compiled_program`,
  which binds a per-device `JitExecutor` (`.to(device)`: loads the cubin, needs a GPU) and calls its
  `run_compiled_program`, the one Python function that calls the native host wrapper (`capi_func`, a ctypes
  function that launches the kernels). `compiled.to(dev)(...)` reaches the same `JitExecutor.run_compiled_program`.
- With PTX/CUBIN kept (the DSL's envar `keep_ptx`/`keep_cubin`, what CUTE_DSL_KEEP=ptx,cubin sets), the compiler
  writes `<dump_dir>/<mangled>.<arch>.{ptx,cubin}` and `JitFunctionArtifacts.__post_init__` reads them back:
  `compiled.__ptx__` (str) and `compiled.__cubin__` (bytes) are the texts, whatever happens to the files later.

So: compile capture turns keep on for the DSL's compiles, records every `JitCompiledFunction` `_func` returns, and
makes `JitCompiledFunction.run_compiled_program` a no-op (no executor, no GPU: on a CPU nothing else would work);
the launch gate counts and skips at `JitExecutor.run_compiled_program` (every real launch, whichever door it came
in by) and takes the arguments to log from the outer call (a compiled function's `__call__`, a direct jit call).

Kept free of the harness's imports: this runs in the worker.
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from rungs.worker import launch_gate

STAGES = (("__ptx__", "ptx", False), ("__cubin__", "cubin", True), ("__mlir__", "mlir", False))
"""The compiled function's artifact attributes, the suffix each is written as, and whether it is bytes."""


def _dsl_classes() -> tuple[Any, Any, Any, Any]:
    from cutlass.base_dsl.compiler import CompileCallable
    from cutlass.base_dsl.dsl import BaseDSL
    from cutlass.base_dsl.jit_executor import JitCompiledFunction, JitExecutor

    return BaseDSL, JitCompiledFunction, JitExecutor, CompileCallable


def _label(compiled: Any, func: Any) -> None:
    """Name the compiled function after the @cute.jit function it came from: the launch log and the dumps say
    `softmax_launch`, not the class name."""
    if compiled is not None and not hasattr(compiled, "__name__"):
        try:
            compiled.__name__ = getattr(func, "__name__", "cute_jit")
        except AttributeError:  # pragma: no cover - a class with slots
            pass


@contextlib.contextmanager
def _keep_artifacts(dsl: Any, dump_dir: str) -> Iterator[None]:
    """PTX and CUBIN kept for the compiles in the block, written under dump_dir. Set on the DSL's env manager (read at
    each compile by `CompileOptions.apply_envar_settings`), not through CUTE_DSL_KEEP in the environment: keeping
    turns the JIT cache off (`_prepare_compilation`), and for the whole process that would recompile a direct
    @cute.jit call at every call of the run and bench phases."""
    envar = dsl.envar
    saved = envar.keep_ptx, envar.keep_cubin, envar.dump_dir
    envar.keep_ptx, envar.keep_cubin, envar.dump_dir = True, True, dump_dir
    try:
        yield
    finally:
        envar.keep_ptx, envar.keep_cubin, envar.dump_dir = saved


class CuteWorker:
    """The WorkerBackend of "cute"."""

    def __init__(self) -> None:
        self._gated = False
        self._ungate: Callable[[], None] = lambda: None

    def preload(self, device: str) -> None:
        import cutlass  # noqa: F401 - about 1 s: the MLIR bindings and the DSL singletons
        import cutlass.cute  # noqa: F401
        import cutlass.cute.runtime  # noqa: F401

    # ---- compile phase -------------------------------------------------------------------------------------
    def install_compile_capture(self, on_cuda: bool, launches: Any) -> Callable[[], None]:
        BaseDSL, JitCompiledFunction, _, _ = _dsl_classes()
        dump_dir = tempfile.mkdtemp(prefix="cute-dump-")  # the worker's scratch ($TMPDIR)
        calls = _OuterCalls()

        def compile_only(self: Any, funcBody: Any, *args: Any, call_original: Callable[..., Any], **kwargs: Any) -> Any:
            if calls.depth:  # a jit function inlined into the one being traced
                return call_original(self, funcBody, *args, **kwargs)
            direct = not kwargs.get("compile_only", False)
            if direct:  # a direct @cute.jit call: compiled as cute.compile would, launched as a no-op below
                kwargs = {**kwargs, "compile_only": True}
            launches.mark(True)
            with calls.entered(), _keep_artifacts(self, dump_dir):
                compiled = call_original(self, funcBody, *args, **kwargs)  # raises: left marked as compiling
            launches.mark(False)
            if isinstance(compiled, JitCompiledFunction):
                _label(compiled, funcBody)
                launches.compiled.append((compiled.__name__, compiled, launches.shape))
                if direct:
                    with calls.outer(funcBody, args, kwargs):
                        compiled.run_compiled_program([])
                    return None
            return compiled

        def run_nothing(self: Any, exe_args: Any) -> int:
            # Counted and logged as the run phase logs it, not run: no executor, no GPU. The compiled function's
            # __call__ converted the arguments first, so a wrong argument fails here as it would on the GPU.
            handle, args, kwargs = calls.current(self)
            launch_gate.note_launch(handle, args, kwargs, autotuner=False)
            launches.count += 1
            on_launch = getattr(launches, "on_launch", None)  # `harness export` records the compiled call itself
            if on_launch is not None:
                on_launch(self, handle is self, args, kwargs)
            return 0  # CUDA's success code, what a launch returns

        patches = {(BaseDSL, "_func"): _bind(compile_only, BaseDSL._func),
                   (JitCompiledFunction, "run_compiled_program"): run_nothing}
        for cls in _with_own_call(JitCompiledFunction):
            patches[(cls, "__call__")] = calls.wrap_call(cls.__call__, lambda: contextlib.nullcontext())
        undo = _patch(patches)
        if on_cuda:
            return undo
        from rungs.backends import aot_device

        undo_device = aot_device.install()  # the entry's stream and SM-count queries, answered as the H200 would

        def restore() -> None:
            undo_device()
            undo()
        return restore

    def write_compiled(self, compiled: list[tuple[str, Any, list[Any]]], out_dir: Path) -> list[dict[str, Any]]:
        out_dir.mkdir(parents=True, exist_ok=True)
        summaries = []
        seen: dict[str, str] = {}  # cubin digest -> stem: two cute.compile calls of one specialization, one dump
        for stem, handle, shapes in compiled:
            cubin = getattr(handle, "__cubin__", None)
            digest = hashlib.sha256(cubin if isinstance(cubin, bytes) else str(cubin).encode()).hexdigest()
            if cubin is not None and digest in seen:
                _add_shapes(out_dir / f"{seen[digest]}.json", shapes)
                continue
            seen[digest] = stem
            for attr, suffix, binary in STAGES:
                data = getattr(handle, attr, None)
                if not data or (isinstance(data, str) and Path(data).suffix == f".{suffix}"):
                    continue  # not kept (the attribute is then the path the file would have had)
                (out_dir / f"{stem}.{suffix}").write_bytes(data if binary and isinstance(data, bytes)
                                                           else str(data).encode())
            ptx = getattr(handle, "__ptx__", None) or ""
            threads = _threads(ptx)
            kernels = sorted(getattr(handle, "kernel_info", {}) or {})
            meta = {"function": getattr(handle, "function_name", stem), "kernels": kernels,
                    "threads_per_block": threads, "shapes": shapes}
            (out_dir / f"{stem}.json").write_text(json.dumps(meta, default=str))
            summaries.append({"name": stem, "num_warps": threads // 32 if threads else None, "num_stages": None,
                              "shared_bytes": None, "functions": kernels})  # the cubin's names: ncu filters by them
        return summaries

    # ---- run and bench phases ------------------------------------------------------------------------------
    def install_launch_gate(self, gate: Any) -> None:
        if self._gated:
            return
        self._gated = True
        BaseDSL, JitCompiledFunction, JitExecutor, CompileCallable = _dsl_classes()
        import cutlass.cute.runtime as runtime

        calls = _OuterCalls()
        original_run = JitExecutor.run_compiled_program

        def direct_jit(self: Any, funcBody: Any, *args: Any, call_original: Callable[..., Any], **kwargs: Any) -> Any:
            if kwargs.get("compile_only") or calls.depth:  # cute.compile, or a jit inlined into a trace
                with calls.entered(), gate.inside():
                    compiled = call_original(self, funcBody, *args, **kwargs)
                _label(compiled, funcBody)
                return compiled
            with calls.outer(funcBody, args, kwargs), calls.entered(), gate.inside():  # compiles (or hits the JIT
                return call_original(self, funcBody, *args, **kwargs)  # cache), then launches: gated_run counts it

        def gated_run(self: Any, exe_args: Any) -> Any:
            if gate.skip:
                return 0  # CUDA's success code: the launcher cannot tell the probe from a launch by it
            gate.launched(*calls.current(self))
            with gate.inside():
                return original_run(self, exe_args)

        def inside(original: Callable[..., Any]) -> Callable[..., Any]:
            def gated_helper(*args: Any, **kwargs: Any) -> Any:
                with gate.inside():  # from_dlpack reads __dlpack__; cute.compile converts torch arguments
                    return original(*args, **kwargs)
            return gated_helper

        patches = {(BaseDSL, "_func"): _bind(direct_jit, BaseDSL._func),
                   (JitExecutor, "run_compiled_program"): gated_run,
                   (CompileCallable, "_compile"): inside(CompileCallable._compile),
                   (runtime, "from_dlpack"): inside(runtime.from_dlpack)}
        for cls in _with_own_call(JitCompiledFunction):
            patches[(cls, "__call__")] = calls.wrap_call(cls.__call__, gate.inside, gate)
        saved = {key: getattr(*key) for key in patches}
        for (owner, name), wrapper in patches.items():  # putting an original back is tampering (rungs/worker/tamper.check)
            gate.watch_launcher(owner, name, wrapper)
        gate.launcher_codes.add(direct_jit.__code__)

        def ungate() -> None:  # for tests: a worker process never takes the gate off
            for (owner, name), original in saved.items():
                setattr(owner, name, original)
            gate.installed[:] = [w for w in gate.installed if (w[0], w[1]) not in saved]
        self._ungate = ungate

    def before_run(self, on_cuda: bool) -> None:
        """Nothing to set up: there is no CuTe interpreter, so a CPU worker never gets here with a CuTe task."""


def _with_own_call(base: type) -> list[type]:
    """`base` and its loaded subclasses that define their own __call__: CudaDialectJitCompiledFunction (it checks
    the workspace arguments, then calls the base's), and, where apache-tvm-ffi is installed, the TVM-FFI class, whose
    __call__ is tvm_ffi.Function.__call__ and never reaches a JitExecutor (wrap_call counts and skips it itself)."""
    try:  # the TVM-FFI provider imports only where apache-tvm-ffi is installed
        import cutlass.cutlass_dsl.tvm_ffi_provider  # noqa: F401
    except ImportError:
        pass
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "__call__" in vars(cls):
            found.append(cls)
    return found


def _threads(ptx: str) -> int | None:
    """Threads per block from the PTX's `.reqntid x, y, z` (the DSL writes the launch's block size there)."""
    match = re.search(r"\.reqntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", ptx)
    if not match:
        return None
    x, y, z = (int(v) if v else 1 for v in match.groups())
    return x * y * z


def _add_shapes(meta_path: Path, shapes: list[Any]) -> None:
    meta = json.loads(meta_path.read_text())
    meta["shapes"] += [s for s in shapes if s not in meta["shapes"]]
    meta_path.write_text(json.dumps(meta, default=str))


class _OuterCalls:
    """The calls in progress that launch (a compiled function's __call__, a direct @cute.jit call): what a launch
    at the bottom (`run_compiled_program`, which sees only converted ctypes arguments) is logged as."""

    def __init__(self) -> None:
        self.stack: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = []
        self.depth = 0
        """>0 inside a compile: a jit function called there is inlined into the trace, not launched."""

    def current(self, fallback: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        return self.stack[-1] if self.stack else (fallback, (), {})

    @contextlib.contextmanager
    def outer(self, handle: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
        self.stack.append((handle, args, kwargs))
        try:
            yield
        finally:
            self.stack.pop()

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def wrap_call(self, original: Callable[..., Any], inside: Callable[[], Any], gate: Any = None
                  ) -> Callable[..., Any]:
        """A compiled function's __call__. One that is not Python (the TVM-FFI class's is tvm_ffi.Function.__call__)
        never reaches a JitExecutor, so it is counted and skipped here."""
        counts_itself = gate is not None and not inspect.isfunction(original)

        def gated_call(compiled: Any, *args: Any, **kwargs: Any) -> Any:
            if counts_itself:
                if gate.skip:
                    return 0
                gate.launched(compiled, args, kwargs)
            with self.outer(compiled, args, kwargs), inside():
                return original(compiled, *args, **kwargs)
        return gated_call


def _bind(wrapper: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    """A method wrapper with the original bound in, as a plain function (its code object is the wrapper's)."""
    def method(self: Any, funcBody: Any, *args: Any, **kwargs: Any) -> Any:
        return wrapper(self, funcBody, *args, call_original=original, **kwargs)
    return method


def _patch(patches: dict[tuple[Any, str], Callable[..., Any]]) -> Callable[[], None]:
    saved = {key: getattr(key[0], key[1]) for key in patches}
    for (owner, name), value in patches.items():
        setattr(owner, name, value)

    def restore() -> None:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)
    return restore


WORKER = CuteWorker()
