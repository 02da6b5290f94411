"""The TileLang backend's worker half: compile capture and the launch gate, around tilelang's JITKernel.

- Compile capture: TileLang compiles inside `tilelang.compile` (lowering, then nvcc on the generated CUDA), so
  the compile is marked as the compiler's both there and in `T.prim_func`'s parse of the program. Its kernel cache
  is off for the phase, so that nvcc really runs and its cubin (and, by --keep, its PTX) is taken as it comes out
  (`contrib.nvcc.compile_cuda`, which the CUDA backend calls by module attribute). A launch (`JITKernel.__call__`) is recorded
  instead of run; a kernel with `out_idx` gets fresh outputs of the declared shapes, as a launch would give.
- Launch gate: `JITKernel.__call__` is counted and logged, skipped while `gate.skip` is set (outputs as above,
  unwritten), and runs inside `gate.inside()` (the adapter's own torch calls, such as output allocation and the
  stream query, are not the candidate's).
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Callable

from rungs.worker import launch_gate
from rungs.backends.cuda_worker import write_stages

_binaries: dict[str, tuple[str, bytes, list[str] | None, Any, str | None]] = {}
"""generated CUDA source -> (format, nvcc's output, its options, arch, its PTX) as the compile produced them."""
_gated: list[bool] = []


def _placeholder_outputs(kernel: Any, args: tuple[Any, ...]) -> Any:
    """What a launch of a kernel with `out_idx` returns, unwritten: torch.empty of each declared output. None for
    a kernel that writes the tensors it is given; None too where an output's shape is symbolic."""
    import torch

    out_idx = list(getattr(kernel, "out_idx", None) or [])
    if not out_idx:
        return None
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    outs = []
    for i in out_idx:
        param = kernel.params[i]
        if not all(isinstance(d, int) for d in param.shape):
            return None
        outs.append(torch.empty(list(param.shape), dtype=param.torch_dtype(), device=device))
    return outs[0] if len(outs) == 1 else outs


_GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")
"""The device functions of TileLang's generated CUDA source: `extern "C" __global__ void __launch_bounds__(256)
gemm_kernel(...)`."""


def _name(kernel: Any) -> str:
    func = getattr(kernel, "prim_func", None)
    symbol = func.attrs.get("global_symbol") if func is not None and func.attrs is not None else None
    return str(symbol) if symbol is not None else "tilelang_kernel"


class TileLangWorker:
    def preload(self, device: str) -> None:
        import tilelang  # noqa: F401 - about 5 s of imports (TVM)
        import tilelang.language  # noqa: F401

    def install_compile_capture(self, on_cuda: bool, launches: Any) -> Callable[[], None]:
        import tilelang.language as T
        from tilelang.contrib import nvcc
        from tilelang.env import env
        from tilelang.jit.kernel import JITKernel

        original_init, original_call = JITKernel.__init__, JITKernel.__call__
        original_nvcc, original_prim_func = nvcc.compile_cuda, T.prim_func
        cache_was_on = env.is_cache_enabled()

        def compiling(fn: Callable[..., Any]) -> Callable[..., Any]:
            def marked(*args: Any, **kwargs: Any) -> Any:
                launches.mark(True)
                out = fn(*args, **kwargs)  # raises: left marked in the compiler
                launches.mark(False)
                return out
            return marked

        def keep_binary(code: str, target_format: str = "ptx", arch: Any = None, options: Any = None,
                        path_target: Any = None, verbose: bool = False) -> Any:
            if target_format not in ("cubin", "fatbin"):
                return original_nvcc(code, target_format, arch, options, path_target, verbose)
            # --keep leaves nvcc's intermediate PTX beside the cubin: the dumps get it without a second compile
            with tempfile.TemporaryDirectory(prefix="tl_keep_") as keep:
                binary = original_nvcc(code, target_format, arch, [*(options or []), "--keep", "--keep-dir", keep],
                                       path_target, verbose)
                ptx = next((p.read_text(errors="replace") for p in sorted(Path(keep).glob("*.ptx"))), None)
            _binaries[code] = (target_format, bytes(binary), list(options or []), arch, ptx)
            return binary

        def record_launch(self: Any, *args: Any, **kwargs: Any) -> Any:
            launch_gate.note_launch(self, args, kwargs, False)  # as the run phase's gate logs it: the parent compares them
            launches.count += 1
            launches.compiled.append((_name(self), self, launches.shape))
            return _placeholder_outputs(self, args)

        env.disable_cache()
        JITKernel.__init__ = compiling(original_init)
        JITKernel.__call__ = record_launch
        T.prim_func = compiling(original_prim_func)
        nvcc.compile_cuda = keep_binary

        def restore() -> None:
            JITKernel.__init__, JITKernel.__call__ = original_init, original_call
            T.prim_func, nvcc.compile_cuda = original_prim_func, original_nvcc
            if cache_was_on:
                env.enable_cache()

        return restore

    def write_compiled(self, compiled: list[tuple[str, Any, list[Any]]], out_dir: Path) -> list[dict[str, Any]]:
        from tilelang.contrib import nvcc

        summaries = []
        for stem, kernel, shapes in compiled:
            source = kernel.get_kernel_source()
            fmt, binary, options, arch, ptx = _binaries.get(source, (None, None, None, None, None))
            with kernel.target:  # nvcc takes the architecture from the current target
                if binary is None:  # compiled before the capture (a cache hit): compile it again here
                    options = nvcc.default_compile_options(kernel.compile_flags)
                    fmt, binary = "cubin", bytes(nvcc.compile_cuda(source, "cubin", options=options))
                if ptx is None:
                    ptx = nvcc.compile_cuda(source, "ptx", arch, options=options).decode(errors="replace")
            launch = _launch_config(source)
            write_stages(out_dir, stem, {"cu": source, "ptx": ptx, fmt or "cubin": binary},
                         {"name": _name(kernel), "target": str(kernel.target), "out_idx": kernel.out_idx,
                          "params": [f"{p.dtype}{list(p.shape)}" for p in kernel.params], "launch": launch,
                          "shapes": shapes})
            summaries.append({"name": stem, "num_warps": launch.get("threads", 0) // 32 or None, "num_stages": None,
                              "shared_bytes": launch.get("dynamic_shared_bytes"),
                              "functions": _GLOBAL.findall(source)})  # what ncu sees (`<prim_func>_kernel`)
        return summaries

    def install_launch_gate(self, gate: Any) -> None:
        if _gated:
            return
        from tilelang.jit.kernel import JITKernel

        original = JITKernel.__call__

        def gated_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if gate.skip:
                return _placeholder_outputs(self, args)
            gate.launched(self, args, kwargs)
            with gate.inside():
                return original(self, *args, **kwargs)

        gate.watch_launcher(JITKernel, "__call__", gated_call)  # putting the original back is tampering
        _gated.append(True)

    def before_run(self, on_cuda: bool) -> None:
        return None


def _launch_config(source: str) -> dict[str, int]:
    """Threads per block and dynamic shared memory as the generated source declares them (TileLang writes
    `__launch_bounds__(256, 1)` on the kernel and sets the dynamic shared size in its host code)."""
    import re

    out: dict[str, int] = {}
    bounds = re.search(r"__launch_bounds__\((\d+)", source)
    if bounds:
        out["threads"] = int(bounds.group(1))
    return out


WORKER = TileLangWorker()
