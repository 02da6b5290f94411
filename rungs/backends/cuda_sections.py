"""Timing sections of a CUDA C++ kernel: two markers the harness defines, measured by an instrumented build.

A candidate marks a region inside a kernel of its CUDA source (a name, not a string; begin and end in one scope):

    KH_SECTION_BEGIN(qk);
    for (int k = 0; k < HEAD_DIM; ++k) s += q[k] * kt[k];
    KH_SECTION_END(qk);

rungs/backends/cuda_api.py puts the markers' definitions in front of any source that uses them. In every build but
the sections step's they are empty, so the timed build, the sm_90a build on a CPU and the dumps are the unmarked
kernel's (tests/test_cuda_backend.py compares the SASS). The sections step's process (rungs/worker/sections_target.py)
builds the kernels again inside `instrumented`: there a marker reads the SM's cycle counter (clock64) and the
global timer at BEGIN, and at END lane 0 of each warp appends one record (program, warp, region, start cycle,
cycles, start ns) to a buffer the harness allocates and points each loaded module's `kh_records` at. On leaving,
the records are summarized in that process and the first programs' written as a chrome trace (Perfetto opens it).
Standard library only at import: the sections target imports this module before torch.
"""
from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any, Iterator

_MARK = re.compile(r"\bKH_SECTION_BEGIN\(\s*([A-Za-z_]\w*)\s*\)")
TRACE_SUFFIX = ".chrome_trace"
SUMMARY_SUFFIX = ".summary.json"
CAPACITY = 1 << 24
"""Records per loaded module (32 bytes each: 512 MiB): a flash attention at S=4096 with 4096 programs of 8 warps
and three regions per key block makes about 6.3 million. Records past it are counted and dropped."""
RECORD_WORDS = 4
HEADER_BYTES = 16
"""An address-compiled-in buffer (`address_buffer`) holds the record count in its first 16 bytes."""

RECORDER = r"""
static __device__ __forceinline__ unsigned long long kh_globaltimer() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
static __device__ __forceinline__ void kh_record(unsigned int region, long long t0, unsigned long long g0) {
    long long t1 = clock64();
    unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (thread % 32 != 0) return;  // one record per warp: its lanes run the region together
    unsigned int i = atomicAdd(KH_COUNT, 1u);
    if (i >= KH_CAPACITY) return;
    unsigned long long program = blockIdx.x + gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    unsigned long long* r = KH_RECORDS + 4ull * i;
    r[0] = (program << 32) | ((unsigned long long)(thread / 32) << 16) | region;
    r[1] = (unsigned long long)t0; r[2] = (unsigned long long)(t1 - t0); r[3] = g0;
}
#define KH_SECTION_BEGIN(name) long long kh_t0_##name = clock64(); unsigned long long kh_g0_##name = kh_globaltimer()
#define KH_SECTION_END(name) kh_record(KH_REGION_##name, kh_t0_##name, kh_g0_##name)
"""
"""The device half of the markers, over KH_COUNT, KH_RECORDS and KH_CAPACITY (each instrumented build says where
its buffer is: here, module globals the harness points at a buffer; TileLang's, an address compiled in)."""
_INSTRUMENTED = r"""
__device__ unsigned long long* kh_records;
__device__ unsigned int kh_capacity;
__device__ unsigned int kh_count;
#define KH_COUNT (&kh_count)
#define KH_RECORDS kh_records
#define KH_CAPACITY kh_capacity
""" + RECORDER


def regions(source: str) -> list[str]:
    """The region names a CUDA candidate marks, in order of first appearance."""
    return list(dict.fromkeys(_MARK.findall(source)))


_HELPER_MARK = re.compile(r"\bsection_begin\(\s*[\"']([A-Za-z_]\w*)[\"']")


def helper_regions(source: str) -> list[str]:
    """The region names a candidate marks with the Python helpers `section_begin("qk")` (the CuTe DSL's and
    TileLang's), in order of first appearance."""
    return list(dict.fromkeys(_HELPER_MARK.findall(source)))


class _Recorder:
    """The instrumented build's state: region ids across every source compiled, and each loaded module's buffer."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.modules: list[tuple[Any, Any, str]] = []  # (count's device address, records tensor, kernel name)

    def header(self, source: str) -> str:
        for name in regions(source):
            self.ids.setdefault(name, len(self.ids))
        defines = "".join(f"#define KH_REGION_{n} {i}u\n" for n, i in self.ids.items())
        return defines + _INSTRUMENTED

    def attach(self, kernel: Any, function: Any) -> None:
        """Point a freshly loaded module's `kh_records` at a buffer of its own (modules without markers have none)."""
        import ctypes

        import torch
        from cuda.bindings import driver

        err, module = driver.cuFuncGetModule(function)
        if err != driver.CUresult.CUDA_SUCCESS:
            return
        found = {}
        for symbol in ("kh_records", "kh_capacity", "kh_count"):
            err, address, _ = driver.cuModuleGetGlobal(module, symbol.encode())
            if err != driver.CUresult.CUDA_SUCCESS:
                return
            found[symbol] = address
        records = torch.zeros(CAPACITY * RECORD_WORDS, dtype=torch.int64, device="cuda")
        for symbol, value in (("kh_records", ctypes.c_uint64(records.data_ptr())),
                              ("kh_capacity", ctypes.c_uint32(CAPACITY)), ("kh_count", ctypes.c_uint32(0))):
            driver.cuMemcpyHtoD(found[symbol], ctypes.addressof(value), ctypes.sizeof(value))
        self.modules.append((found["kh_count"], records, kernel.name))

    def blocks(self) -> list[tuple[Any, str, int]]:
        """Every module's records (an n x RECORD_WORDS tensor on the GPU), its kernel's name and how many records
        past the capacity were dropped."""
        import ctypes

        import torch
        from cuda.bindings import driver

        torch.cuda.synchronize()
        out = []
        for count_address, records, kernel in self.modules:
            count = ctypes.c_uint32(0)
            driver.cuMemcpyDtoH(ctypes.addressof(count), count_address, 4)
            kept = min(count.value, CAPACITY)
            out.append((records[: kept * RECORD_WORDS].view(-1, RECORD_WORDS), kernel, count.value - kept))
        return out


def trace_events(rows: list[list[int]], names: dict[int, str], kernel: str) -> list[dict[str, Any]]:
    """Records (program << 32 | warp << 16 | region, start cycle, cycles, start ns) as chrome trace events, one bar
    per warp and region instance (the CuTe DSL's markers write the same records: rungs/backends/cute_sections.py)."""
    out = []
    for head, start, cycles, ns in rows:
        program, warp, region = head >> 32, (head >> 16) & 0xFFFF, head & 0xFFFF
        out.append({"name": names.get(region, f"region {region}"), "ph": "X", "cat": "section",
                    "pid": f"{kernel} CTA{program}".strip(), "tid": f"warp {warp}", "ts": ns / 1000.0,
                    "dur": max(cycles, 1) / 1000.0,  # as if at 1 GHz, for the bars; the cycles are in args
                    "args": {"cycles": cycles, "start_cycle": start, "program": program}})
    return out


def write_result(stem: Path, blocks: list[tuple[Any, str, int]], names: dict[int, str]) -> None:
    """The records of every block (rows, kernel name, records dropped) summarized where they are (millions of them:
    rungs/backends/sections_summary.py) into `stem` + SUMMARY_SUFFIX, and the first TRACE_PROGRAMS programs of each
    kernel as a chrome trace for Perfetto at `stem` + TRACE_SUFFIX."""
    import torch

    from rungs.backends.sections_summary import TRACE_PROGRAMS, summarize_records

    columns: dict[str, list[Any]] = {"program": [], "track": [], "region": [], "start": [], "cycles": []}
    events, dropped = [], 0
    for b, (rows, kernel, lost) in enumerate(blocks):
        # The kernel writes the buffer: a record naming no region the source marks is dropped, so what it wrote
        # cannot make the step loop over 65536 made-up regions.
        known = (rows[:, 0] & 0xFFFF) < len(names)
        dropped += lost + int((~known).sum())
        rows = rows[known]
        head = rows[:, 0]
        program = (head >> 32) & 0xFFFFFFFF
        key = (b << 32) | program  # programs of different kernels are different programs
        columns["program"].append(key)
        columns["track"].append((key << 16) | ((head >> 16) & 0xFFFF))
        columns["region"].append(head & 0xFFFF)
        columns["start"].append(rows[:, 1].to(torch.float64))
        columns["cycles"].append(rows[:, 2].to(torch.float64))
        events += trace_events(rows[program < TRACE_PROGRAMS].cpu().tolist(), names, kernel)
    joined = {k: torch.cat(v) if v else torch.zeros(0) for k, v in columns.items()}
    summary = summarize_records(joined["program"], joined["track"], joined["region"], joined["start"],
                                joined["cycles"], names)
    Path(str(stem) + SUMMARY_SUFFIX).write_text(json.dumps({"summary": summary, "dropped": dropped}))
    Path(str(stem) + TRACE_SUFFIX).write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                                                          "otherData": {"dropped_records": dropped,
                                                                        "programs_kept": TRACE_PROGRAMS}}))


def collect(stem: Path) -> dict[str, Any]:
    """What the sections target returns: the summary, the trace's file name and the dropped records' count."""
    path = Path(str(stem) + SUMMARY_SUFFIX)
    if not path.is_file():
        return {"error": "the instrumentation wrote no records"}
    result = json.loads(path.read_text())
    trace = Path(str(stem) + TRACE_SUFFIX)
    return {**result, "trace": trace.name if trace.is_file() else None}


@contextlib.contextmanager
def instrumented(stem: Path) -> Iterator[None]:
    """Within the block, marked CUDA sources compile with the records in and every module loaded for a launch gets
    its buffer; on leaving, the records are written to `stem` + TRACE_SUFFIX. The candidate must be imported and
    called inside the block (compile_cuda runs at its import)."""
    from rungs.backends import cuda_api

    recorder = _Recorder()
    original_header, original_load = cuda_api.section_header, cuda_api._load

    def load(kernel: Any, device: int) -> Any:
        function = original_load(kernel, device)
        recorder.attach(kernel, function)
        return function

    cuda_api.section_header, cuda_api._load = recorder.header, load
    cuda_api._built.clear()  # sources compiled before the block have the empty markers
    try:
        yield
        write_result(stem, recorder.blocks(), {i: n for n, i in recorder.ids.items()})
    finally:
        cuda_api.section_header, cuda_api._load = original_header, original_load


@contextlib.contextmanager
def address_buffer(stem: Path, ids: dict[str, int]) -> Iterator[int]:
    """A record buffer for a build that compiles its device address in (TileLang, the CuTe DSL): the count in a
    16-byte header, then CAPACITY records. Yields the address; on leaving, writes the records as the trace, with the
    region names `ids` holds by then."""
    import torch

    buffer = torch.zeros(HEADER_BYTES // 8 + CAPACITY * RECORD_WORDS, dtype=torch.int64, device="cuda")
    yield buffer.data_ptr()
    torch.cuda.synchronize()
    count = int(buffer[:1].view(torch.int32)[0].item())
    kept = min(count, CAPACITY)
    rows = buffer[HEADER_BYTES // 8: HEADER_BYTES // 8 + kept * RECORD_WORDS].view(-1, RECORD_WORDS)
    write_result(stem, [(rows, "", count - kept)], {i: n for n, i in ids.items()})
