"""The CUDA C++ backend's parent half: what the ladder knows about `dsl: cuda` tasks.

A candidate file defines `kernel(...)`, holds its CUDA source in a string, compiles it with
`rungs.backends.cuda_api.compile_cuda` (NVRTC, or the toolkit's nvcc where libnvrtc is missing) and launches it with
`cuda_api.launch` on torch tensors. Nothing can execute CUDA C++ on a CPU, so there the climb stops after compile
and dumps: "compiled, not verified". The worker half (compile capture and launch gate) is cuda_worker.py.
"""
from __future__ import annotations

import re

from rungs.backends import Markers
from rungs.backends import cuda_api

_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:()]+)\((?P<line>\d+)\): (?:catastrophic )?error:\s*(?P<reason>.+)$", re.M)
"""NVRTC's and nvcc's diagnostics: `softmax.cu(12): error: identifier "y" is undefined`."""
_PTXAS = re.compile(r"^ptxas.*?error\s*:\s*(?P<reason>.+)$", re.M)
_PLAIN = re.compile(r"^(?:\w+\.)*(?:CudaCompileError|TypeError|ValueError): (?P<reason>.+)$", re.M)


class CudaBackend:
    name = "cuda"
    label = "CUDA C++"
    markers = Markers(module="rungs.backends.cuda_api", decorators=("compile_cuda", "cuda_api.compile_cuda"))
    verifies_on_cpu = False
    dump_suffixes = ("cu", "ptx", "cubin", "json")
    worker_module = "rungs.backends.cuda_worker"
    sections_module = "rungs.backends.cuda_sections"

    def version(self) -> str:
        try:
            route = cuda_api.compiler_route()
        except cuda_api.CudaCompileError:
            return "not installed"
        return f"{cuda_api.compiler_version()} ({route})"

    def compile_message(self, error: str, source: str | None = None) -> str:
        """The compiler's first error with its line in the CUDA source (the line within the source string, which
        the message says, since it is not the Python file's line)."""
        diagnostic = _DIAGNOSTIC.search(error)
        if diagnostic:
            return f"{diagnostic.group('reason').strip()} (CUDA source line {diagnostic.group('line')})"[:400]
        for pattern in (_PTXAS, _PLAIN):
            found = pattern.search(error)
            if found:
                return found.group("reason").strip()[:400]
        lines = [ln.strip() for ln in error.splitlines() if ln.strip()]
        return (lines[-1] if lines else "the CUDA compile failed")[:400]

    def worker_env(self, device: str) -> dict[str, str]:
        """A CPU compiles for the H200 (sm_90a); a GPU for its own capability. Where nvcc is the route, the worker
        is told where the toolkit is (its PATH may not name it)."""
        env = {} if device == "cuda" else {"HARNESS_CUDA_ARCH": cuda_api.DEFAULT_ARCH}
        nvcc = cuda_api.nvcc_path()
        if nvcc is not None:
            env["CUDA_HOME"] = str(cuda_api.Path(nvcc).parent.parent)
        return env


BACKEND = CudaBackend()
