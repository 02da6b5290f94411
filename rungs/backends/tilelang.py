"""The TileLang backend's parent half: what the ladder knows about `dsl: tilelang` tasks.

A candidate file defines `kernel(...)`, builds `@T.prim_func` programs (tilelang.language as T) and compiles them
with `tilelang.compile(func, out_idx=...)`, leaving `target` out: the worker names it (sm_90a on a CPU, the GPU
itself on a GPU). TileLang lowers to CUDA C++ and compiles it with nvcc; it has no interpreter, so on a CPU the
climb stops after compile and dumps: "compiled, not verified". The worker half is tilelang_worker.py.
"""
from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

from rungs.backends import Markers
from rungs.backends.cuda_api import nvcc_path

CPU_TARGET = {"kind": "cuda", "arch": "sm_90a"}
"""What a CPU worker compiles for: the H200 (TileLang would otherwise ask the driver for the GPU's capability)."""

_NVCC = re.compile(r"\((?P<line>\d+)\): (?:catastrophic )?error:\s*(?P<reason>.+)$", re.M)
"""nvcc on the generated CUDA source: `tvm_kernels.cu(41): error: ...` (a line of the generated file)."""
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(?P<type>\w+(?:Error|Exception)):\s*(?P<reason>\S.*)$", re.M)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s+(?P<src>.+)$', re.M)


class TileLangBackend:
    name = "tilelang"
    label = "TileLang"
    markers = Markers(module="tilelang", decorators=("T.prim_func", "prim_func", "tilelang.jit", "tilelang.compile"))
    verifies_on_cpu = False
    dump_suffixes = ("cu", "ptx", "cubin", "json")
    worker_module = "rungs.backends.tilelang_worker"
    sections_module = "rungs.backends.tilelang_sections"
    """Timing sections: two documented helpers that TileLang's CUDA post-processing makes the CUDA C++ markers."""

    def version(self) -> str:
        try:
            return metadata.version("tilelang")
        except metadata.PackageNotFoundError:
            return "not installed"

    def compile_message(self, error: str, source: str | None = None) -> str:
        """nvcc's first error on the generated source, else the exception TileLang raised (its lowering passes
        raise with a reason), with the candidate's last frame where the traceback shows one."""
        found = _NVCC.search(error)
        if found:
            return f"nvcc: {found.group('reason').strip()} (line {found.group('line')} of the generated CUDA)"[:400]
        exception = None
        for exception in _EXCEPTION.finditer(error):
            pass  # the last: the exception itself, after any chained causes
        if exception is None:
            lines = [ln.strip() for ln in error.splitlines() if ln.strip()]
            return (lines[-1] if lines else "the TileLang compile failed")[:400]
        reason = f"{exception.group('type')}: {exception.group('reason').strip()}"
        frames = [f for f in _FRAME.finditer(error) if "site-packages" not in f.group("file")
                  and "/rungs/" not in f.group("file")]
        if frames:
            last = frames[-1]
            reason += f" (line {last.group('line')} in {last.group('func')}: {last.group('src').strip()})"
        return reason[:400]

    def worker_env(self, device: str) -> dict[str, str]:
        """The compile target on a CPU, where TileLang's 'auto' would ask the driver; the toolkit's home, since
        TileLang runs nvcc (it finds it by CUDA_HOME first); no compile banner on the worker's output."""
        env = {"TILELANG_PRINT_ON_COMPILATION": "0"}
        if device != "cuda":
            env["TILELANG_DEFAULT_TARGET"] = json.dumps(CPU_TARGET)
        nvcc = nvcc_path()
        if nvcc is not None:
            env["CUDA_HOME"] = str(Path(nvcc).parent.parent)
        return env


BACKEND = TileLangBackend()
