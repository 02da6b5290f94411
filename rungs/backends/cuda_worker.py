"""The CUDA C++ backend's worker half: compile capture and the launch gate, around rungs.backends.cuda_api.

Both wrap the helper's two module-level seams, `_build` and `_launch`, which `compile_cuda` and `launch` look up
at call time: a candidate that imported those names before the patch still goes through it.

- Compile capture: every build also keeps its PTX (one more compile, for the dumps), and every launch is recorded
  on `launches` instead of run, so a CPU (where nothing can run) and a GPU's compile phase see the same kernels.
- Launch gate: each real launch is counted and logged through the gate, skipped while `gate.skip` is set, and runs
  inside `gate.inside()` (torch's own ops there, such as the stream query, are not the candidate's).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from rungs.worker import launch_gate
from rungs.backends import cuda_api

_configs: dict[str, list[dict[str, Any]]] = {}
"""kernel hash -> the launch configurations the compile phase saw (grid, block, dynamic shared bytes)."""
_gated: list[bool] = []


def write_stages(out_dir: Path, stem: str, stages: dict[str, bytes | str | None], meta: dict[str, Any]) -> None:
    """`<stem>.<suffix>` for each stage there is, and `<stem>.json`. Shared with the TileLang worker half."""
    for suffix, data in stages.items():
        if data is not None:
            (out_dir / f"{stem}.{suffix}").write_bytes(data if isinstance(data, bytes) else data.encode())
    (out_dir / f"{stem}.json").write_text(json.dumps(meta, indent=1, default=str))


class CudaWorker:
    def preload(self, device: str) -> None:
        import torch  # noqa: F401 - what every candidate imports

        try:
            cuda_api.compiler_route()  # loads libnvrtc
        except cuda_api.CudaCompileError:
            pass  # the candidate's compile says so, in its words
        if device == "cuda":
            from cuda.bindings import driver  # noqa: F401

    def install_compile_capture(self, on_cuda: bool, launches: Any) -> Callable[[], None]:
        original_build, original_launch = cuda_api._build, cuda_api._launch

        def capture_build(source: str, name: str, options: tuple[str, ...], arch: str,
                          with_ptx: bool) -> cuda_api.CudaKernel:
            launches.mark(True)
            kernel = original_build(source, name, options, arch, True)  # raises: left marked in the compiler
            launches.mark(False)
            return kernel

        def capture_launch(kernel: cuda_api.CudaKernel, grid: tuple[int, ...], block: tuple[int, ...],
                           args: tuple[Any, ...], shared_bytes: int) -> None:
            # Logged as the run phase's gate logs it: the parent compares the two phases' launches.
            launch_gate.note_launch(kernel, args, {"grid": grid, "block": block, "shared_bytes": shared_bytes}, False)
            launches.count += 1
            launches.compiled.append((kernel.name, kernel, launches.shape))
            config = {"grid": list(grid), "block": list(block), "shared_bytes": shared_bytes}
            seen = _configs.setdefault(kernel.hash, [])
            if config not in seen:
                seen.append(config)

        original_map = cuda_api._tensor_map

        def blank_map(tensor: Any, box: tuple[int, ...], swizzle: int) -> cuda_api.TensorMap:
            # On a CPU nothing is launched: a TMA descriptor's arguments are checked, and a blank one stands in.
            cuda_api._check_tma(tensor, box, swizzle)
            return cuda_api.TensorMap()

        cuda_api._build, cuda_api._launch = capture_build, capture_launch
        if not on_cuda:
            cuda_api._tensor_map = blank_map

        def restore() -> None:
            cuda_api._build, cuda_api._launch = original_build, original_launch
            cuda_api._tensor_map = original_map

        return restore

    def write_compiled(self, compiled: list[tuple[str, Any, list[Any]]], out_dir: Path) -> list[dict[str, Any]]:
        summaries = []
        for stem, kernel, shapes in compiled:
            configs = _configs.get(kernel.hash, [])
            ptx = kernel.ptx if kernel.ptx is not None else cuda_api._build(
                kernel.source, kernel.name, kernel.options, kernel.arch, True).ptx
            write_stages(out_dir, stem, {"cu": kernel.source, "ptx": ptx, "cubin": kernel.cubin},
                         {"name": kernel.name, "arch": kernel.arch, "route": kernel.route,
                          "options": list(kernel.options), "compile_s": round(kernel.compile_s, 3),
                          "launches": configs, "shapes": shapes})
            threads = [_product(c["block"]) for c in configs]
            summaries.append({"name": stem, "num_warps": max(threads) // 32 if threads else None, "num_stages": None,
                              "shared_bytes": max((c["shared_bytes"] for c in configs), default=None),
                              "compile_s": round(kernel.compile_s, 3)})
        return summaries

    def install_launch_gate(self, gate: Any) -> None:
        if _gated:
            return
        original = cuda_api._launch

        def gated_launch(kernel: cuda_api.CudaKernel, grid: tuple[int, ...], block: tuple[int, ...],
                         args: tuple[Any, ...], shared_bytes: int) -> None:
            if gate.skip:
                return None
            gate.launched(kernel, args, {"grid": grid, "block": block, "shared_bytes": shared_bytes})
            with gate.inside():
                return original(kernel, grid, block, args, shared_bytes)

        gate.watch_launcher(cuda_api, "_launch", gated_launch)  # putting the original back is tampering
        gate.launcher_codes.update({cuda_api.launch.__code__, cuda_api.CudaKernel.__call__.__code__})
        _gated.append(True)

    def before_run(self, on_cuda: bool) -> None:
        return None


def _product(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


WORKER = CudaWorker()
