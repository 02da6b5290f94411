"""Timing sections of a TileLang kernel: two documented helpers, measured by an instrumented build.

A candidate marks a region inside a `T.Kernel` block of its `@T.prim_func` (statements, begin and end at the same
nesting level):

    from rungs.backends.tilelang_sections import section_begin, section_end

    section_begin("qk")
    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
    section_end("qk")

TVMScript evaluates the calls while it parses the function: in every build but the sections step's they return None,
which adds no statement, so the timed build, the sm_90a build on a CPU and the dumps are the unmarked kernel's
(tests/test_tilelang_backend.py compares the generated CUDA). Inside `instrumented` (rungs/worker/sections_target.py)
they return an extern call (`kh_section_begin_qk()`), and TileLang's CUDA post-processing hook, which the harness sets
there, turns each into the CUDA C++ markers (KH_SECTION_BEGIN(qk); rungs/backends/cuda_sections.py) over a record
buffer whose address is compiled in, with the device code of those markers in front of the source. The records and
the trace are the CUDA C++ markers' own. Standard library only at import.
"""
from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any, Iterator

from rungs.backends.cuda_sections import CAPACITY, HEADER_BYTES, RECORDER, address_buffer, collect
from rungs.backends.cuda_sections import helper_regions as regions

__all__ = ["section_begin", "section_end", "regions", "instrumented", "collect"]

_CALL = re.compile(r"\bkh_section_(begin|end)_([A-Za-z_]\w*)\(\);")
_NAME = re.compile(r"[A-Za-z_]\w{0,63}")


class _State:
    address = 0
    """The record buffer's device address; 0 outside the sections step (the markers emit nothing)."""
    ids: dict[str, int] = {}


_state = _State()


def _marker(kind: str, name: str) -> Any:
    if not _NAME.fullmatch(name):
        raise ValueError(f"section name {name!r}: expected an identifier (letters, digits, _)")
    if not _state.address:
        return None
    import tilelang.language as T

    _state.ids.setdefault(name, len(_state.ids))
    return T.call_extern("int32", f"kh_section_{kind}_{name}")


def section_begin(name: str) -> Any:
    """Where region `name` starts, inside a T.Kernel block; None (no statement) in the timed build."""
    return _marker("begin", name)


def section_end(name: str) -> Any:
    """Where region `name` ends."""
    return _marker("end", name)


def instrumented_source(code: str, address: int, ids: dict[str, int]) -> str:
    """TileLang's generated CUDA with the extern marker calls made the CUDA C++ markers, over the buffer at
    `address` (the count in its header, the records after it)."""
    head = (f"#define KH_COUNT ((unsigned int*){address:#x}ull)\n"
            f"#define KH_RECORDS ((unsigned long long*){address + HEADER_BYTES:#x}ull)\n"
            f"#define KH_CAPACITY {CAPACITY}u\n"
            + "".join(f"#define KH_REGION_{n} {i}u\n" for n, i in ids.items()) + RECORDER)
    body = _CALL.sub(lambda m: f"KH_SECTION_{m.group(1).upper()}({m.group(2)});", code)
    return head + body


def use_hook(address: int | None) -> None:
    """Set TileLang's CUDA post-processing hook: the markers over the buffer at `address`, or (None) the source as
    generated."""
    from tilelang.engine.callback import register_cuda_postproc_callback

    if address is None:
        register_cuda_postproc_callback(lambda code, target: code, override=True)
    else:
        register_cuda_postproc_callback(lambda code, target: instrumented_source(code, address, _state.ids),
                                        override=True)


@contextlib.contextmanager
def instrumented(stem: Path) -> Iterator[None]:
    """Within the block, TileLang kernels compiled with the markers record into a buffer of the harness; on leaving,
    the records are summarized for `collect`. The candidate must be imported and called inside the block."""
    import tilelang

    if hasattr(tilelang, "disable_cache"):  # a cached kernel would hold another buffer's address, or none
        tilelang.disable_cache()
    _state.ids = {}
    try:
        with address_buffer(stem, _state.ids) as address:
            _state.address = address
            use_hook(address)
            yield
    finally:
        _state.address = 0
        use_hook(None)
