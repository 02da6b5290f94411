"""The CuTe DSL backend's parent half (nvidia-cutlass-dsl): what the ladder knows about `dsl: cute` tasks.

A candidate file defines `kernel(...)`, which wraps its torch tensors with `cutlass.cute.runtime.from_dlpack` and
launches `@cute.kernel`s from a `@cute.jit` function compiled with `cute.compile` (or called directly). There is no
CuTe interpreter, so on a CPU the climb stops after compile and dumps: "compiled, not verified". The worker half
(compile capture and launch gate) is rungs/backends/cute_worker.py.
"""
from __future__ import annotations

import re
from importlib import metadata

from rungs.backends import Markers

DIST = "nvidia-cutlass-dsl"
CPU_ARCH = "sm_90a"
"""What a CPU worker compiles for: the H200's architecture (the wheel would otherwise probe the CUDA driver)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DIAGNOSTIC = re.compile(r"^\s*error(?:\[(?P<id>[A-Z0-9_]+)\])?:\s*(?P<reason>.+)$", re.M)
"""The DSL's diagnostics: `error[ARG_NON_CONSTANT]: range_constexpr() requires ...`."""
_WHERE = re.compile(r"^\s*-->\s*(?P<file>\S+?):(?P<line>\d+)(?::(?P<col>\d+))?\s*$", re.M)
_SOURCE = re.compile(r"^\s*(?P<line>\d+)\s+\|\s?(?P<text>.*)$", re.M)
_EXCEPTION = re.compile(r"^(?:\w+\.)*(?P<type>\w+(?:Error|Exception)):\s*(?P<reason>\S.*)$", re.M)


class CuteBackend:
    name = "cute"
    label = "CuTe DSL"
    markers = Markers(module="cutlass", decorators=("cute.kernel", "cute.jit"))
    verifies_on_cpu = False
    dump_suffixes = ("ptx", "cubin", "json", "mlir")
    worker_module = "rungs.backends.cute_worker"
    sections_module = "rungs.backends.cute_sections"

    def version(self) -> str:
        try:
            return metadata.version(DIST)
        except metadata.PackageNotFoundError:
            return "not installed"

    def compile_message(self, error: str, source: str | None = None) -> str:
        """The DSL's reason and the candidate's line it points at, on one line. The diagnostic is multi-line and
        coloured (`error[ID]: reason`, `--> file:line:col`, the source excerpt, suggestions); a plain Python
        exception raised while tracing (NameError, TypeError) keeps its type and the candidate's frame."""
        text = _ANSI.sub("", error)
        diagnostic = _DIAGNOSTIC.search(text)
        if diagnostic:
            reason = diagnostic.group("reason").strip()
            where = _WHERE.search(text, diagnostic.end())
            if where:
                line = where.group("line")
                source = next((m.group("text").strip() for m in _SOURCE.finditer(text, where.end())
                               if m.group("line") == line), "")
                reason += f" (line {line}" + (f": {source}" if source else "") + ")"
            return reason
        exception = None
        for exception in _EXCEPTION.finditer(text):
            pass  # the last one: the exception itself, after any chained causes
        frames = re.findall(r"^\s+(\S+\.py):(\d+) in (\w+): (.*)$", text, flags=re.M)
        if exception is None:
            first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "the CuTe DSL compile failed")
            return first[:300]
        reason = f"{exception.group('type')}: {exception.group('reason').strip()}"
        if frames:
            _, line, func, source = frames[-1]
            reason += f" (line {line} in {func}: {source.strip()})"
        return reason[:400]

    def worker_env(self, device: str) -> dict[str, str]:
        """On a CPU the wheel cannot detect the architecture (it asks the driver): it is named. Keeping PTX and
        CUBIN is switched on by the worker half for the compile phase only (keeping turns the JIT cache off for
        every compile while it is on), into a folder of the worker's scratch."""
        # The legacy compiler backend's JitExecutor is where the worker half counts and skips launches (the
        # "cutlass" backend launches through another path); TVM-FFI's compiled functions do not reach it either.
        env = {"CUTE_DSL_COMPILER_BACKEND": "legacy", "CUTE_DSL_ENABLE_TVM_FFI": "0"}
        if device != "cuda":
            env["CUTE_DSL_ARCH"] = CPU_ARCH
        return env


BACKEND = CuteBackend()
