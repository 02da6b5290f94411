"""Timing sections of a Triton kernel: Proton's own scope markers, measured by Proton's instrumentation mode.

A candidate marks a region inside a @triton.jit function with Triton's intra-kernel profiler language:

    import triton.profiler.language as pl

    pl.enter_scope("qk")            # or: with pl.scope("qk"):
    qk = tl.dot(q, tl.trans(k))     #         qk = tl.dot(q, tl.trans(k))
    pl.exit_scope("qk")

Those markers emit nothing unless Proton's instrumentation is on (`record` returns before building an op when
`flags.instrumentation_on` is false, in triton 3.6 and 3.9 alike), so the timed build, the AOT sm_90a build on a CPU
and the dumps are the unmarked kernel's (tests/test_sections.py compares the SASS). The interpreter would refuse
them (a builtin called outside a JIT), so the worker makes them no-ops there (`quiet_in_interpreter`).

The sections step (rungs/ladder/sections.py) builds the kernel again in a process of its own with the instrumentation on
(`instrumented`), one call at one bench shape, and reads Proton's chrome trace back as events (`collect`).
Standard library only at import: the worker and the sections target import this module.
"""
from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

LANGUAGE = "triton.profiler.language"
_MARK = re.compile(r"\b(?:enter_scope|exit_scope|scope)\(\s*(?:name\s*=\s*)?[\"']([^\"']+)[\"']")
TRACE_SUFFIX = ".chrome_trace"
BUFFER_BYTES = 128 << 10
"""Proton's record buffer in global memory, per program: Triton allocates this many bytes for each program of the
grid (the H200 run with 64 MiB asked for 256 GiB at 4096 programs). A flash-attention program enters its three
regions once per key block (64 blocks at S=4096) in each of 8 warps, 8 bytes a record: about 25 KiB. The default
buffer in shared memory is circular and would keep only the last records."""


def regions(source: str) -> list[str]:
    """The region names a Triton kernel file marks, in order of first appearance; none unless it imports Proton's
    language module (a host-side `proton.scope` is not a region inside a kernel)."""
    if LANGUAGE not in source and "from triton.profiler import language" not in source:
        return []
    return list(dict.fromkeys(_MARK.findall(source)))


def quiet_in_interpreter() -> None:
    """Under TRITON_INTERPRET=1 the markers are plain calls without a JIT's semantic, which Triton's builtins refuse;
    make them no-ops there, as they are in an uninstrumented build."""
    try:
        import triton.profiler.language as pl
    except ImportError:  # a triton without Proton: nothing to quiet
        return

    class _Scope:
        def __init__(self, name: str, **_: Any) -> None:
            self.name = name

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    def _no_op(name: Any = None, **_: Any) -> None:
        return None

    pl.enter_scope, pl.exit_scope, pl.scope = _no_op, _no_op, _Scope  # type: ignore[assignment]


def _mode() -> Any:
    """Proton's instrumentation mode with the records in a large global buffer, where this triton has the mode
    classes (3.9, 3.6); else Proton's default. One record per warp: triton 3.6 refuses any other granularity
    ("granularity must be warp for now", H200, 2026-12-02)."""
    try:
        from triton.profiler import mode
        return mode.Default(buffer_type="global", buffer_size=BUFFER_BYTES)
    except (ImportError, AttributeError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def instrumented(stem: Path) -> Iterator[None]:
    """Within the block, Triton kernels compile with Proton's records in and every launch is recorded; on leaving,
    the trace is written to `stem` + TRACE_SUFFIX. The candidate must be imported and called inside the block (its
    kernels compile on first call). Triton DSL kernels are opted in: Proton instruments only Gluon by default."""
    import triton.profiler as proton
    import triton.profiler.language as pl

    pl.enable_semantic("triton")
    proton.start(str(stem), data="trace", backend="instrumentation", mode=_mode())
    try:
        yield
    finally:
        proton.finalize()


def trace_file(stem: Path) -> Path | None:
    """The trace Proton wrote for `stem` (it adds its own suffix)."""
    found = sorted(stem.parent.glob(stem.name + "*"))
    return next((p for p in found if p.suffix == TRACE_SUFFIX), found[0] if found else None)


_PROGRAM = re.compile(r"CTA\s*(\d+)")
_WARP = re.compile(r"warp\s*\d+")


def collect(stem: Path) -> dict[str, Any]:
    """What the sections target returns: the summary of every record Proton wrote, and its trace cut to the first
    TRACE_PROGRAMS programs (a whole one runs to hundreds of MB) for Perfetto."""
    from rungs.backends.sections_summary import TRACE_PROGRAMS, summarize

    path = trace_file(stem)
    if path is None:
        return {"error": "the instrumentation wrote no trace"}
    data = json.loads(path.read_text())
    summary = summarize(read_trace(data))
    events = data.get("traceEvents", data) if isinstance(data, dict) else data
    kept = [e for e in events if not isinstance(e, dict) or _cta(e) < TRACE_PROGRAMS]
    path.write_text(json.dumps({**data, "traceEvents": kept} if isinstance(data, dict) else kept))
    return {"summary": summary, "trace": path.name}


def _cta(event: dict[str, Any]) -> int:
    """The program a record of Proton's belongs to (0 for its other bars: call paths, flows)."""
    found = _PROGRAM.search(str(event.get("pid", "")))
    return int(found.group(1)) if found else 0


def read_trace(data: Any) -> list[dict[str, Any]]:
    """Proton's chrome trace as plain events: region, program (the CTA), track (one warp of it), start and length in
    cycles. Proton names a record's process "<kernel> Core<sm> CTA<id>" and its thread "warp <n> (line <k>)" (the
    line only keeps overlapping bars apart), and writes cycles divided by its assumed clock ("Frequency (MHz)" in
    args, 1000), so `dur * MHz` is cycles again. Its call-path and flow bars are not records and are left out. Each
    program's global-timer lifetime (ns) comes along where Proton gives it. `data`: the trace, or its file."""
    if isinstance(data, Path):
        data = json.loads(data.read_text())
    events = data.get("traceEvents", data) if isinstance(data, dict) else data
    out = []
    for e in events if isinstance(events, list) else []:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") in ("call_path", "flow", "kernel"):
            continue
        pid, tid = str(e.get("pid", "")), str(e.get("tid", ""))
        program = _PROGRAM.search(pid) or _PROGRAM.search(tid)
        warp = _WARP.search(tid)
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        mhz = float(args.get("Frequency (MHz)", 1000.0))
        event = {"region": str(e.get("name", "")), "program": program.group(1) if program else pid,
                 "track": f"{pid}/{warp.group(0) if warp else tid}", "start": float(e.get("ts", 0.0)) * mhz,
                 "cycles": float(e.get("dur", 0.0)) * mhz}
        if "Init Time (ns)" in args and "Post Final Time (ns)" in args:
            event["init_ns"], event["end_ns"] = float(args["Init Time (ns)"]), float(args["Post Final Time (ns)"])
        out.append(event)
    return out
