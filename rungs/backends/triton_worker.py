"""Triton's worker half: compile capture (ahead of time for sm_90a on a CPU), the launch gate, the compiled stages.

Imported inside the sandboxed worker only (rungs/worker/); kept free of the harness's imports and of pydantic.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from rungs.worker import autotune, launch_gate
from rungs.core.atomic import atomic_write

ASM_SUFFIX = {"ttir": "ttir", "ttgir": "ttgir", "llir": "ll", "ptx": "ptx", "cubin": "cubin", "source": "source"}
"""Compiler stages worth keeping from a CompiledKernel's asm dict, with the file suffix each is written as."""
AOT_TARGET = ("cuda", 90, 32)  # sm_90a: what the H200 runs


class _AotDriver:
    """Stands in for Triton's CUDA driver on a machine with no GPU, so `warmup` compiles for sm_90a."""

    def __init__(self) -> None:
        import torch
        from triton.backends.compiler import GPUTarget

        self._target = GPUTarget(*AOT_TARGET)
        self._torch = torch

    def get_current_target(self) -> Any:
        return self._target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        return self._torch.device("cpu")

    def is_active(self) -> bool:
        return True


def kernel_metadata(kernel: Any) -> dict[str, Any]:
    """What the dumps rung reads beside the asm files: warps and stages, Triton's dynamic shared memory (the
    cubin's resource table shows only the static part), and the values that tell specializations apart: the
    constexprs, and the arguments Triton specialized on (an integer equal to 1, such as a unit stride)."""
    meta = {k: v for k, v in kernel.metadata._asdict().items() if isinstance(v, (int, float, str, bool, type(None)))}
    fn = getattr(getattr(kernel, "src", None), "fn", None)
    names, declared = getattr(fn, "arg_names", []), set(getattr(fn, "constexprs", []))
    meta["constexprs"], meta["specialized"] = {}, {}
    for key, value in (getattr(kernel.src, "constants", None) or {}).items() if fn is not None else ():
        index = key[0] if isinstance(key, tuple) and len(key) == 1 else None
        if isinstance(index, int) and index < len(names) and isinstance(value, (int, float, str, bool)):
            meta["constexprs" if index in declared else "specialized"][names[index]] = value
    meta["not_16_aligned"] = not_16_aligned(kernel)
    return meta


def not_16_aligned(kernel: Any) -> list[str] | None:
    """The pointer and integer arguments Triton could not specialize as multiples of 16 at this launch (a pointer
    not 16-byte aligned, an integer such as a row length not divisible by 16): with one of them in a load's address,
    no 16-byte vector can be proved aligned. None where this Triton does not say (no `attrs` on the source)."""
    src = getattr(kernel, "src", None)
    attrs, signature = getattr(src, "attrs", None), getattr(src, "signature", None)
    names = getattr(getattr(src, "fn", None), "arg_names", None)
    if not isinstance(attrs, dict) or not isinstance(signature, dict) or not names:
        return None
    constants = {k[0] for k in (getattr(src, "constants", None) or {}) if isinstance(k, tuple) and len(k) == 1}
    divisible = set()
    for key, values in attrs.items():
        if isinstance(key, tuple) and len(key) == 1 and any(
                isinstance(v, (list, tuple)) and len(v) == 2 and v[0] == "tt.divisibility" and v[1] >= 16
                for v in values or ()):
            divisible.add(key[0])
    out = []
    for i, name in enumerate(names):
        kind = signature.get(name)
        if i in constants or not isinstance(kind, str) or not (kind.startswith("*") or kind[:1] in "iu"):
            continue
        if i not in divisible:
            out.append(name)
    return out


class TritonWorker:
    label = "Triton"

    def preload(self, device: str) -> None:
        import triton  # noqa: F401
        import triton.language  # noqa: F401

        if device == "cpu":  # the compiler's and the interpreter's modules the CPU's namespace watch imports anyway
            from rungs.backends import triton_namespaces

            triton_namespaces.preload()

    def install_compile_capture(self, on_cuda: bool, launches: Any) -> Callable[[], None]:
        """Make every `kernel[grid](...)` compile without launching, recording the compiled kernel.

        Returns a function that undoes the patch, so a GPU worker can go on to real launches (which then hit
        Triton's in-memory cache). The stand-in CPU driver is never undone: a CPU worker runs no more phases.
        """
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction

        from rungs.backends import triton_namespaces

        if not on_cuda:
            from triton.runtime import driver

            driver.set_active(_AotDriver())
        original_run, original_autotune_run = JITFunction.run, Autotuner.run
        gate = launch_gate.gate()

        def compile_only(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            gate.note(self, args, {**kwargs, "grid": grid})  # compared with the run phase's
            triton_namespaces.check("before the sm_90a build", interpreted=False)  # no-op unless taken (on a CPU)
            launches.mark(True)
            kernel = original_run(self, *args, grid=grid, warmup=True, **kwargs)  # raises: left marked in Triton
            launches.count += 1
            launches.mark(False)
            launches.compiled.append((self.__name__, kernel, launches.shape))
            return kernel

        def autotune_compile_all(self: Any, *args: Any, **kwargs: Any) -> Any:
            kwargs.pop("warmup", None)  # Autotuner.warmup sets its own
            gate.note(self, args, kwargs, autotuner=True)
            triton_namespaces.check("before the sm_90a builds of the autotuner's configs", interpreted=False)
            with gate.autotuning():  # every config compiles: not what one run launches
                return self.warmup(*args, **kwargs)

        JITFunction.run = compile_only
        Autotuner.run = autotune_compile_all
        if not on_cuda:  # Triton's and numpy's names as this leaves them, before the candidate's import: checked
            triton_namespaces.take(fresh=True)  # before each build (a CPU's verdict rests on the two builds agreeing)

        def restore() -> None:
            JITFunction.run, Autotuner.run = original_run, original_autotune_run

        return restore

    def write_compiled(self, compiled: list[tuple[str, Any, list[Any]]], out_dir: Path) -> list[dict[str, Any]]:
        kernels = []
        for stem, kernel, shapes in compiled:
            for stage, suffix in ASM_SUFFIX.items():
                if stage in kernel.asm:
                    data = kernel.asm[stage]
                    (out_dir / f"{stem}.{suffix}").write_bytes(data if isinstance(data, bytes) else str(data).encode())
            meta = kernel.metadata
            kernels.append({"name": stem, "num_warps": getattr(meta, "num_warps", None),
                            "num_stages": getattr(meta, "num_stages", None),
                            "shared_bytes": getattr(meta, "shared", None)})
            atomic_write(out_dir / f"{stem}.json", json.dumps({**kernel_metadata(kernel), "shapes": shapes},
                                                              default=str))
        return kernels

    def install_launch_gate(self, gate: Any) -> None:
        """Wrap Triton's launchers: count launches, pause the torch-op trace inside them, and skip launches on
        demand (a skipped launch still compiles, a cache hit, and returns what a launch returns: a launcher that
        uses the returned kernel object cannot tell the probe from a real call by it)."""
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:  # pragma: no cover
            InterpretedFunction = None
        for cls, launches in ((JITFunction, True), (InterpretedFunction, True), (Autotuner, False),
                              (Heuristics, False)):
            if cls is None:
                continue
            original = cls.run

            def gated(self: Any, *args: Any, __original: Callable = original, __launches: bool = launches,
                      __tuner: bool = cls is Autotuner, **kwargs: Any) -> Any:
                real = __launches and not kwargs.get("warmup", False)
                if real:
                    gate.launched(self, args, kwargs)
                    if gate.skip:
                        return __original(self, *args, **{**kwargs, "warmup": True})
                elif __tuner:
                    gate.note(self, args, kwargs, autotuner=True)
                with gate.inside():
                    if __tuner:  # pinned to the harness's chosen config: Triton's own timing loop never runs here
                        with gate.autotuning(), autotune.pinned(self):
                            return __original(self, *args, **kwargs)
                    return __original(self, *args, **kwargs)

            gate.watch_launcher(cls, "run", gated)
        # Traced on a CPU (the interpreter, the autotuner pinned, the JIT; 2026-12-05): inside these launchers torch
        # makes only allocations, views, copies and fills, and the interpreter reads storage to the host. Anything else
        # there is a callback of the candidate's, however it is built (launch_gate.judged).
        gate.own_reads = {"untyped_storage": _interpreter_codes("untyped_storage")}

    def before_run(self, on_cuda: bool) -> None:
        import os

        if not on_cuda and os.environ.get("TRITON_INTERPRET") == "1":
            # Triton's interpreter computes bfloat16 on raw bit patterns; this makes it compute as a GPU does.
            from rungs.backends import triton_lang_patch, triton_namespaces, triton_order, triton_ptx
            from rungs.backends.triton_interp import install
            from rungs.backends.triton_sections import quiet_in_interpreter

            triton_lang_patch.install()  # first, while triton.language holds its builtins as shipped
            install()
            triton_ptx.install()  # hints checked, flush-to-zero and float8 saturation as the sm_90a build has them
            triton_order.install()  # programs in an order of their own each launch, as a GPU may run them
            quiet_in_interpreter()  # region markers are no-ops, as in the timed build
            # last: the language's names as this harness's patches leave them, checked at each launch and call
            triton_namespaces.install_interpreter_checks()


def _interpreter_codes(name: str) -> frozenset[Any]:
    """The code objects of Triton's interpreter that name `name` (GridExecutor's _to_cpu and _from_cpu, nested in
    _init_args_hst and _restore_args_dev, in triton 3.6 and 3.9): a nested function's code is a constant of its
    outer function's, the same object each call runs."""
    import types

    try:
        import triton.runtime.interpreter as interpreter
    except ImportError:  # pragma: no cover - no interpreter, no reads of its own
        return frozenset()
    found: set[Any] = set()

    def walk(code: types.CodeType) -> None:
        if name in code.co_names:
            found.add(code)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    for owner in [interpreter, *(v for v in vars(interpreter).values() if isinstance(v, type))]:
        for value in vars(owner).values():
            fn = getattr(value, "__func__", value)
            if isinstance(fn, types.FunctionType) and fn.__module__ == interpreter.__name__:
                walk(fn.__code__)
    return frozenset(found)


WORKER = TritonWorker()
