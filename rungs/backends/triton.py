"""Triton's parent half: how a Triton kernel shows itself in source, what its compiler's errors say, which stages
its worker half writes. The worker half is rungs/backends/triton_worker.py."""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata

from rungs.backends import Markers
from rungs.core.result import headline
from rungs.core.tracebacks import compile_where


def installed_version(distribution: str) -> str:
    """A distribution's installed version, read without importing it; "not installed" where it is missing."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


@dataclass(frozen=True)
class TritonBackend:
    name: str = "triton"
    label: str = "Triton"
    markers: Markers = Markers(module="triton", decorators=("triton.jit", "jit"))
    verifies_on_cpu: bool = True
    """Triton's interpreter (TRITON_INTERPRET=1) runs the kernels on a CPU."""
    dump_suffixes: tuple[str, ...] = ("ttir", "ttgir", "ll", "ptx", "cubin", "source", "json")
    worker_module: str = "rungs.backends.triton_worker"
    sections_module: str = "rungs.backends.triton_sections"
    """Timing sections: Proton's scope markers and its instrumentation mode (rungs/ladder/sections.py)."""

    def version(self) -> str:
        return installed_version("triton")

    def compile_message(self, error: str, source: str | None = None) -> str:
        """Triton's CompilationError says 'at LINE:COL:' relative to the kernel's def; keep that with the reason,
        and the candidate's line that launched it. With the candidate's source, the line is the file's
        (`kernel.py:21, column 8, in the @triton.jit function k`), as the traceback's frames say theirs."""
        where = re.search(r"at (\d+):(\d+):", error)
        launch = re.findall(r"^\s+(\S+\.py):(\d+) in (\w+):", error, flags=re.M)
        reason = headline(error)
        found = compile_where(error, source) if source and where else None
        if found:
            func, line, col, _ = found
            name = launch[-1][0] if launch else "kernel.py"
            reason = f"{reason} ({name}:{line}, column {col}, in the @triton.jit function {func}"
            reason += f"; launched from {name}:{launch[-1][1]} in {launch[-1][2]})" if launch else ")"
        elif where:
            reason = f"{reason} (at line {where.group(1)}, column {where.group(2)} of the @triton.jit function"
            reason += f", launched from line {launch[-1][1]} in {launch[-1][2]})" if launch else ")"
        return reason

    def worker_env(self, device: str) -> dict[str, str]:
        return {"TRITON_DEFAULT_FP_FUSION": "1"}


BACKEND = TritonBackend()
