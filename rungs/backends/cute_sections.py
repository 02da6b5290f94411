"""Timing sections of a CuTe DSL kernel: two documented helpers, measured by an instrumented build.

A candidate marks a region inside a @cute.kernel (begin and end in one loop body or straight-line block):

    from rungs.backends.cute_sections import section_begin, section_end

    t = section_begin("qk")
    cute.gemm(mma_qk, acc_s, tSrQ, tSrK, acc_s)
    section_end("qk", t)

The DSL traces Python: in every build but the sections step's, `section_begin` returns None and `section_end` returns
at once, so they add nothing to the kernel's IR and the timed build, the sm_90a build on a CPU and the dumps are the
unmarked kernel's (tests/test_cute_backend.py compares the PTX). Inside `instrumented`
(rungs/worker/sections_target.py), the harness allocates a record buffer before the candidate is imported and its
address is compiled into the kernel as a constant: `section_begin` reads clock64 and %globaltimer, `section_end` has
lane 0 of each warp append one record (program, warp, region, start cycle, cycles, start ns), the same records as the
CUDA C++ markers (rungs/backends/cuda_sections.py writes and reads the trace for both). Standard library only at import.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from rungs.backends.cuda_sections import CAPACITY, HEADER_BYTES, RECORD_WORDS, address_buffer, collect
from rungs.backends.cuda_sections import helper_regions as regions

__all__ = ["section_begin", "section_end", "regions", "instrumented", "collect"]



class _State:
    address = 0
    """The record buffer's device address; 0 outside the sections step (the markers emit nothing)."""
    ids: dict[str, int] = {}


_state = _State()
_jitted: dict[str, Any] = {}


def section_begin(name: str) -> Any:
    """Where region `name` starts, inside a @cute.kernel; None (and nothing in the kernel) in the timed build."""
    if not _state.address:
        return None
    import cutlass.cute as cute

    _state.ids.setdefault(name, len(_state.ids))
    return cute.arch.clock64(), cute.arch.globaltimer()


def section_end(name: str, start: Any) -> None:
    """Where region `name` ends: pass what section_begin returned."""
    if start is None or not _state.address:
        return
    _record()(_state.ids.setdefault(name, len(_state.ids)), _state.address, CAPACITY, start[0], start[1])


def _record() -> Any:
    """The device half, made once (importing the DSL is slow, and the parent only reads region names)."""
    if "record" not in _jitted:
        import cutlass
        import cutlass.cute as cute

        @cute.jit
        def record(region: cutlass.Constexpr, address: cutlass.Constexpr, capacity: cutlass.Constexpr,
                   t0: cutlass.Int64, g0: cutlass.Int64) -> None:
            t1 = cute.arch.clock64()
            tx, ty, tz = cute.arch.thread_idx()
            dx, dy, _ = cute.arch.block_dim()
            bx, by, bz = cute.arch.block_idx()
            gx, gy, _ = cute.arch.grid_dim()
            thread = tx + dx * (ty + dy * tz)
            if thread % 32 == 0:  # one record per warp: its lanes run the region together
                count = cute.make_ptr(cutlass.Int32, address, cute.AddressSpace.gmem)
                i = cute.arch.atomic_add(count, cutlass.Int32(1))
                if i < capacity:
                    rec = cute.make_tensor(cute.make_ptr(cutlass.Int64, address + HEADER_BYTES, cute.AddressSpace.gmem),
                                           cute.make_layout(capacity * RECORD_WORDS))
                    program = cutlass.Int64(bx) + cutlass.Int64(gx) * (cutlass.Int64(by) + cutlass.Int64(gy) * cutlass.Int64(bz))
                    at = cutlass.Int64(i) * RECORD_WORDS
                    rec[at] = (program << 32) | (cutlass.Int64(thread // 32) << 16) | region
                    rec[at + 1] = t0
                    rec[at + 2] = t1 - t0
                    rec[at + 3] = g0

        _jitted["record"] = record
    return _jitted["record"]


@contextlib.contextmanager
def instrumented(stem: Path) -> Iterator[None]:
    """Within the block, kernels compiled with the markers record into a buffer of the harness; on leaving, the
    records are summarized for `collect`. The candidate must be imported and called inside the block."""
    _state.ids = {}
    try:
        with address_buffer(stem, _state.ids) as address:
            _state.address = address
            yield
    finally:
        _state.address = 0
