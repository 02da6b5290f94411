"""The CUDA C++ backend on a CPU: NVRTC (or nvcc) compiles a demo for sm_90a under the compile capture, the
dumps hold source, PTX and a cubin whose SASS cuobjdump reads; compiler errors come back as one line; the launch
gate skips, counts and brackets launches."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rungs.worker.launch_gate import Gate
from rungs.backends import cuda_api

try:
    cuda_api.compiler_route()
except cuda_api.CudaCompileError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"no CUDA compiler here: {exc}", allow_module_level=True)

from rungs.backends import get, load_worker  # noqa: E402
from backend_driver import ROOT, compile_demo, s_and_p_v_waits, sass  # noqa: E402

DEMOS = ROOT / "tasks" / "demos"


def test_demo_compiles_for_sm90a_with_dumps(tmp_path: Path) -> None:
    result = compile_demo("cuda", DEMOS / "softmax_cuda_4_fast.py", "softmax_cuda", tmp_path, limit=5)
    assert result["launches"] == 5
    names = {k["name"] for k in result["kernels"]}
    assert names == {"softmax_looped"}  # the first five test shapes are all odd lengths
    for suffix in get("cuda").dump_suffixes:
        assert (tmp_path / f"softmax_looped.{suffix}").is_file(), suffix
    assert ".target sm_90a" in (tmp_path / "softmax_looped.ptx").read_text()
    code = sass(tmp_path / "softmax_looped.cubin")
    assert "sm_90a" in code and "SHFL.BFLY" in code and "MUFU.EX2" in code


def test_both_halves_follow_the_protocol() -> None:
    from rungs.backends import Backend, WorkerBackend

    assert isinstance(get("cuda"), Backend) and isinstance(load_worker(name="cuda"), WorkerBackend)
    assert get("cuda").worker_env("cpu")["HARNESS_CUDA_ARCH"] == "sm_90a"


def test_compile_error_is_one_line_with_the_source_line() -> None:
    source = 'extern "C" __global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n'
    with pytest.raises(cuda_api.CudaCompileError) as info:
        cuda_api.compile_cuda(source, "k")
    message = get("cuda").compile_message(str(info.value))
    assert message == 'identifier "undefined_name" is undefined (CUDA source line 2)'


def test_a_mangled_kernel_name_is_refused_at_compile() -> None:
    with pytest.raises(cuda_api.CudaCompileError, match='extern "C"'):
        cuda_api.compile_cuda("__global__ void k(float* y) { y[0] = 1.f; }", "k")


class StandInGate(Gate):
    """The worker's gate (rungs/worker/launch_gate.Gate), recording each launch's kernel name and grid."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, Any]] = []

    def launched(self, handle: Any, args: Any, kwargs: Any) -> None:
        self.calls.append((handle.name, kwargs["grid"]))


def test_launch_gate_skips_counts_and_brackets(monkeypatch: pytest.MonkeyPatch) -> None:
    seen_depth = []
    monkeypatch.setattr(cuda_api, "_launch", lambda *a: seen_depth.append(gate.depth))  # stands for the GPU
    monkeypatch.setattr("rungs.backends.cuda_worker._gated", [])
    gate = StandInGate()
    load_worker(name="cuda").install_launch_gate(gate)
    kernel = cuda_api.compile_cuda('extern "C" __global__ void k(float* y) { y[0] = 1.f; }', "k")
    gate.skip = True
    cuda_api.launch(kernel, (1,), (32,), ())
    assert gate.calls == [] and seen_depth == []
    gate.skip = False
    kernel((2,), (32,))
    assert gate.calls == [("k", (2,))] and seen_depth == [1]
    assert cuda_api.launch.__code__ in gate.launcher_codes
    assert gate.replaced() == []
    monkeypatch.setattr(cuda_api, "_launch", lambda *a: None)  # a candidate putting an ungated launcher in
    assert gate.replaced() == ["rungs.backends.cuda_api._launch"]


def test_compiling_leaves_the_interpreters_shared_bytes_alone() -> None:
    # An empty compiler log has size 1: written into `b" " * 1` (CPython's one shared b" "), it turned every b" " of
    # the worker into b"\0", and torch.load then read wrong shapes (a flash_attn case loaded as D=0).
    kernel = cuda_api.compile_cuda('extern "C" __global__ void quiet(float* x) { x[0] = 1.0f; }', "quiet")
    assert kernel.cubin[:4] == b"\x7fELF"
    assert bytes([32])[0] == 32 and (b" " * 1)[0] == 32  # the shared one-byte object still holds a space


def _demo_source(path: Path) -> str:
    import ast

    tree = ast.parse(path.read_text())
    return next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "SOURCE")


def _function_sass(kernel: cuda_api.CudaKernel, tmp_path: Path) -> str:
    cubin = tmp_path / f"{kernel.name}-{kernel.hash}.cubin"
    cubin.write_bytes(kernel.cubin)
    text = sass(cubin)
    return text[text.index("Function :"):]


def test_section_markers_leave_the_timed_build_alone_and_record_in_the_instrumented_one(tmp_path: Path,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The marked CUDA flash attention's timed build is the unmarked demo's, instruction for instruction; the
    sections step's build of it reads the global timer and appends records (issue 23)."""
    from rungs.backends import cuda_sections

    marked, plain = _demo_source(DEMOS / "flash_attn_cuda_5_sections.py"), _demo_source(DEMOS / "flash_attn_cuda_4_fast.py")
    assert cuda_sections.regions(marked) == ["qk", "softmax", "pv"] and cuda_sections.regions(plain) == []
    assert get("cuda").sections_module == "rungs.backends.cuda_sections"
    timed = cuda_api.compile_cuda(marked, "attention_d64")
    assert _function_sass(timed, tmp_path) == _function_sass(cuda_api.compile_cuda(plain, "attention_d64"), tmp_path)

    monkeypatch.setattr(cuda_api, "section_header", cuda_sections._Recorder().header)
    instrumented = _function_sass(cuda_api.compile_cuda(marked, "attention_d64"), tmp_path)
    assert "GLOBALTIMER" in instrumented and "CLOCK" in instrumented and "ATOM" in instrumented
    assert instrumented != _function_sass(timed, tmp_path)


def test_the_records_are_summarized_where_they_are_and_the_trace_keeps_the_first_programs(tmp_path: Path) -> None:
    """The instrumented build's records (program << 32 | warp << 16 | region, start, cycles, ns), as many as a real
    kernel makes, become the step's summary in that process; the Perfetto trace holds only the first programs."""
    import torch

    from rungs.backends import cuda_sections
    from rungs.backends.sections_summary import TRACE_PROGRAMS

    programs, warps = 3000, 8  # 72,000 records; each program: qk 300 cycles, softmax 100, pv 600, back to back
    p, w, r = torch.meshgrid(torch.arange(programs), torch.arange(warps), torch.arange(3), indexing="ij")
    start = torch.tensor([0, 300, 400])[r] + 7 * p
    cycles = torch.tensor([300, 100, 600])[r] * torch.where(p == 5, 2, 1)  # program 5 runs twice as long
    rows = torch.stack([(p << 32) | (w << 16) | r, start, cycles, 1000 * p], dim=-1).reshape(-1, 4)
    stem = tmp_path / "trace"
    names = {0: "qk", 1: "softmax", 2: "pv"}
    forged = torch.tensor([[(1 << 32) | 7000, 0, 10, 0]] * 3)  # region 7000: no region the source marks
    cuda_sections.write_result(stem, [(torch.cat([rows, forged]), "attention_d64", 2), (rows[:24], "other", 0)], names)
    result = cuda_sections.collect(stem)
    summary = result["summary"]
    assert summary["programs"] == programs + 1 and result["dropped"] == 5  # the second kernel's program is its own
    pv = next(x for x in summary["regions"] if x["region"] == "pv")
    assert pv["total_cycles"] == 600 * (programs + 2) and pv["spread"] == pytest.approx(2 * 600 / pv["mean_cycles"], abs=1e-3)
    assert {x["region"]: x["share"] for x in summary["regions"]} == pytest.approx({"pv": 0.6, "qk": 0.3, "softmax": 0.1}, abs=1e-3)
    trace = json.loads((tmp_path / result["trace"]).read_text())
    kept = {e["args"]["program"] for e in trace["traceEvents"] if e["pid"].startswith("attention_d64")}
    assert kept == set(range(TRACE_PROGRAMS)) and len(trace["traceEvents"]) == (TRACE_PROGRAMS + 1) * warps * 3


def test_a_tma_descriptor_reaches_the_kernel_and_the_build_loads_through_tma(tmp_path: Path) -> None:
    """cuda_api.tensor_map: a TMA descriptor for a CUDA C++ candidate (ctypes is not the candidate's to use), passed
    by value as a `const __grid_constant__` parameter. On a CPU the compile capture checks its arguments and hands
    back a blank one; the build has UTMALDG in its SASS and the launch log records the descriptor argument."""
    result = compile_demo("cuda", ROOT / "tests" / "data" / "cuda_tma_gemm.py", "gemm_cuda", tmp_path)
    names = {k["name"] for k in result["kernels"]}
    assert names == {"gemm_tma", "gemm_plain"}, names  # the test shapes include both kinds
    assert "UTMALDG.2D" in sass(tmp_path / "gemm_tma.cubin") and "SYNCS" in sass(tmp_path / "gemm_tma.cubin")


def test_tensor_map_says_in_one_line_what_tma_cannot_map() -> None:
    import torch

    worker = load_worker(name="cuda")
    restore = worker.install_compile_capture(False, type("L", (), {"mark": lambda *a: None})())
    try:
        ok = cuda_api.tensor_map(torch.zeros(128, 64, dtype=torch.bfloat16), (64, 64))
        assert isinstance(ok, cuda_api.TensorMap) and len(bytes(ok)) == 128
        for tensor, box, swizzle, words in (
                (torch.zeros(33, 47, dtype=torch.bfloat16), (32, 32), 0, "strides in bytes must be multiples of 16"),
                (torch.zeros(64, 128, dtype=torch.bfloat16), (64, 128), 128, "more than the 128-byte swizzle span"),
                (torch.zeros(64, 64, dtype=torch.bfloat16), (64,), 128, "a box of 2 dimensions"),
                (torch.zeros(64, 64, dtype=torch.bfloat16).t(), (8, 8), 0, "innermost dimension must be contiguous"),
                (torch.zeros(64, 64, dtype=torch.bfloat16), (512, 64), 0, "every box dimension must be 1-256"),
                (torch.zeros(64, 64, dtype=torch.complex64), (8, 8), 0, "TMA has no complex64 element type")):
            with pytest.raises(ValueError, match=words):
                cuda_api.tensor_map(tensor, box, swizzle)
    finally:
        restore()
    with pytest.raises(ValueError, match="takes a CUDA tensor, not a cpu one"):  # outside the CPU capture
        cuda_api.tensor_map(torch.zeros(64, 64, dtype=torch.bfloat16), (64, 64))


def test_the_wgmma_gemm_builds_to_hgmma_tma_and_setmaxnreg_without_spills(tmp_path: Path) -> None:
    """tasks/demos/gemm_cuda_5_wgmma.py (#38: CUDA C++ on Hopper's own path), as far as a CPU can check it: the
    warp-specialized kernel builds to HGMMA 64x256x16 fed by UTMALDG, with mbarrier waits, register reallocation
    and no local memory (128 accumulators a thread in 232 registers). Whether it is right and fast is the GPU's to say:
    `harness check tasks/gemm_cuda.yaml tasks/demos/gemm_cuda_5_wgmma.py` on the H200."""
    result = compile_demo("cuda", DEMOS / "gemm_cuda_5_wgmma.py", "gemm_cuda", tmp_path)
    assert {k["name"] for k in result["kernels"]} == {"gemm_wgmma", "gemm_plain"}
    code = sass(tmp_path / "gemm_wgmma.cubin")
    for op in ("HGMMA.64x256x16.F32.BF16", "UTMALDG.2D", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "USETMAXREG.TRY_ALLOC",
               "USETMAXREG.DEALLOC"):
        assert op in code, op
    assert "STL" not in code and "LDL" not in code  # no spills
    # One source, one module holding both kernels (written under each name): the dumps rung reads each kernel's
    # own SASS and registers from it, not the module's first function's (the plain kernel's 32 registers were
    # reported for the wgmma one, and its SASS would have claimed HGMMA for the plain one).
    import shutil
    import tempfile

    from rungs.ladder.dumps import disassemble

    # cuobjdump runs sandboxed as nobody, who may not enter pytest's private tmp folder: the cubins go where it may
    readable = Path(tempfile.mkdtemp(prefix="wgmma-cubins-"))
    try:
        readable.chmod(0o755)
        for name in ("gemm_wgmma", "gemm_plain"):
            shutil.copy(tmp_path / f"{name}.cubin", readable)
            (readable / f"{name}.cubin").chmod(0o644)
        wgmma_sass, wgmma_usage = disassemble(readable / "gemm_wgmma.cubin")
        plain_sass, plain_usage = disassemble(readable / "gemm_plain.cubin")
    finally:
        shutil.rmtree(readable)
    assert "HGMMA" in wgmma_sass and "HGMMA" not in plain_sass
    assert wgmma_usage["registers"] >= 128 > plain_usage["registers"]



def test_the_wgmma_attention_builds_to_hgmma_and_tma_without_spills(tmp_path: Path) -> None:
    """tasks/demos/flash_attn_cuda_6_wgmma.py (#38: CUDA C++ FlashAttention on Hopper's path), as far as a CPU can
    check it (the GPU test below runs the overlapped flash_attn_cuda_7_overlap): per head dim 64 and 128 a kernel of D/16 + 8 HGMMAs (S = Q K^T, then O += P V with P from
    registers), K and V by 3-D TMA loads, mbarrier waits, register reallocation, the softmax's exp2 on MUFU, and no
    local memory; head dim 32 (a test shape) takes the plain kernel. Whether it is right is the GPU's to say."""
    result = compile_demo("cuda", DEMOS / "flash_attn_cuda_6_wgmma.py", "flash_attn_cuda", tmp_path)
    assert {k["name"] for k in result["kernels"]} == {"attention_wgmma_d64", "attention_wgmma_d128", "attention_plain"}
    for d in (64, 128):
        code = sass(tmp_path / f"attention_wgmma_d{d}.cubin")
        hgmma = [line for line in code.splitlines() if "HGMMA." in line]
        qk = [x for x in hgmma if "HGMMA.64x128x16.F32.BF16 R" in x and ", gdesc[" in x and "tnspB" not in x]
        pv = [x for x in hgmma if re.search(rf"HGMMA\.64x{d}x16\.F32\.BF16 R\d+, R\d+, gdesc\[\w+\]\.tnspB", x)]
        assert len(qk) == d // 16 and len(pv) == 8 and len(hgmma) == d // 16 + 8, (d, hgmma)  # S = Q K^T from shared
        # memory, then O += P V with P from registers and V transposed on the fly, 16 keys a step
        for op in ("UTMALDG.3D", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "USETMAXREG.TRY_ALLOC", "USETMAXREG.DEALLOC",
                   "MUFU.EX2"):
            assert op in code, (d, op)
        assert "STL" not in code and "LDL" not in code, d  # no spills

def test_the_overlapped_attention_keeps_its_wgmma_asynchronous(tmp_path: Path) -> None:
    """tasks/demos/flash_attn_cuda_7_overlap.py: block j's S and block j-1's P V are issued together and waited for
    in two steps (`WARPGROUP.DEPBAR.LE gsb0, 0x1`, then 0x0: ptxas puts both before the softmax, see the demo's
    docstring), the two consumer warpgroups take turns on named barriers
    (BAR.SYNC / BAR.ARV on a register id), and ptxas did not serialize the wgmma: a wgmma in a divergent path makes it
    wait after every HGMMA (warning C7519, one DEPBAR per HGMMA), which is what this kernel's first build did. Head
    dim 256 takes FlashAttention-3's 128 x 80 tile: O's 128 registers a thread beside S and P, still no spills; head
    dim 64 its 192 x 128 tile, three consumer warpgroups at 160 registers a thread, without turns."""
    result = compile_demo("cuda", DEMOS / "flash_attn_cuda_7_overlap.py", "flash_attn_cuda", tmp_path)
    assert {k["name"] for k in result["kernels"]} == {"attention_tall_d64", "attention_wgmma_d128",
                                                      "attention_wide_d128", "attention_plain"}
    wide = compile_demo("cuda", DEMOS / "flash_attn_cuda_7_overlap.py", "flash_attn_d256", tmp_path)  # its test shapes
    assert {k["name"] for k in wide["kernels"]} == {"attention_narrow_d256"}
    for name, d, bn in (("attention_tall_d64", 64, 128), ("attention_wgmma_d128", 128, 128),
                        ("attention_wide_d128", 128, 176), ("attention_narrow_d256", 256, 80)):
        code = sass(tmp_path / f"{name}.cubin")
        hgmma = [line for line in code.splitlines() if "HGMMA." in line]
        qk = [x for x in hgmma if f"HGMMA.64x{bn}x16" in x and "tnspB" not in x]
        pv = [x for x in hgmma if re.search(rf"HGMMA\.64x{d}x16\.F32\.BF16 R\d+, R\d+, gdesc\[\w+\]\.tnspB", x)]
        # the first block's S, the loop's S and P V, the last P V
        assert len(qk) == 2 * (d // 16) and len(pv) == 2 * (bn // 16) and len(hgmma) == len(qk) + len(pv), (name, hgmma)
        waits = re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", code)
        assert "0x1" in waits and len(waits) <= 4, (name, waits)
        turns = bool(re.search(r"BAR\.SYNC\S* R\d+, 0x100", code) and re.search(r"BAR\.ARV R\d+, 0x100", code))
        assert turns == (name != "attention_tall_d64"), name  # three warpgroups (192 queries) do not take turns
        assert "STL" not in code and "LDL" not in code, name


def test_the_shared_p_attention_runs_its_softmax_under_its_own_p_v(tmp_path: Path) -> None:
    """tasks/demos/flash_attn_cuda_8_smem_p.py: with P in shared memory (an SS wgmma for P V), S's first wgmma not
    accumulating and O's rescale tied to the last exp2, ptxas keeps the wait for P V after the softmax: in the loop
    every exp2 of a block's softmax lies between `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S is done) and `0x0` (P V is
    done), where _7 (P in registers) has none there. No wgmma serialized (C7513, C7519: one wait per HGMMA), no
    spills, at each head dim's tile."""
    result = compile_demo("cuda", DEMOS / "flash_attn_cuda_8_smem_p.py", "flash_attn_cuda", tmp_path)
    assert {k["name"] for k in result["kernels"]} == {"attention_pshared_tall_d64", "attention_pshared_d128",
                                                      "attention_plain"}
    compile_demo("cuda", DEMOS / "flash_attn_cuda_8_smem_p.py", "flash_attn_d256", tmp_path)
    for name, d, bn in (("attention_pshared_tall_d64", 64, 128), ("attention_pshared_d128", 128, 128),
                        ("attention_pshared_d256", 256, 64)):
        code = sass(tmp_path / f"{name}.cubin")
        hgmma = [line for line in code.splitlines() if "HGMMA." in line]
        qk = [x for x in hgmma if f"HGMMA.64x{bn}x16" in x and "tnspB" not in x]
        pv = [x for x in hgmma if re.search(rf"HGMMA\.64x{d}x16\.F32\.BF16 R\d+, gdesc\[\w+\]\.tnspB", x)]  # A from smem
        assert len(qk) == 2 * (d // 16) and len(pv) == 2 * (bn // 16) and len(hgmma) == len(qk) + len(pv), (name, hgmma)
        assert sum("RZ, !UPT" in x for x in qk) == 2, name  # each S starts from zero, not from what the softmax left
        waits, after_s, end_pv = s_and_p_v_waits(code)
        assert waits.count("0x1") == 1 and len(waits) <= 4, (name, waits)
        under_pv = code[after_s.end():end_pv.start()].count("MUFU.EX2")
        assert under_pv >= bn // 2, (name, under_pv)  # a thread's bn / 2 exp2s of P, and alpha's
        assert "STL" not in code and "LDL" not in code, name


OVERLAPPED = ["flash_attn_cuda_7_overlap", "flash_attn_cuda_8_smem_p"]
"""The CUDA C++ attention demos with overlaps: P in registers (_7), P in shared memory (_8)."""


@pytest.mark.gpu
@pytest.mark.parametrize("demo", OVERLAPPED)
def test_gpu_the_overlapped_attention_is_right_and_timed(tmp_path: Path, gpu_baselines: Path, demo: str) -> None:
    """An overlapped CUDA C++ FlashAttention through the judging rungs on the GPU: every test shape (lengths no
    block divides, causal and not, head dims 32/64/128) against the float64 reference, then timed calls at a
    2048-long sequence, causal and not (both warpgroups' ping-pong and the TMA stages wrap several times)."""
    import torch

    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check
    from conftest import TASKS, judge_rungs

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    task = load_task(TASKS / "flash_attn_cuda.yaml")
    bench = [{"B": 2, "H": 8, "S": 2048, "D": 128, "causal": c} for c in (False, True)]
    task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"bench": bench})})
    v = check(task, DEMOS / f"{demo}.py", tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1,
              baseline_cache=gpu_baselines, rungs=judge_rungs())
    assert v.verdict == "pass", v.summary
    print(demo, v.rung("benchmark").message)


@pytest.mark.gpu
@pytest.mark.parametrize("demo", OVERLAPPED)
def test_gpu_the_overlapped_attention_at_head_dim_256_is_right_and_timed(tmp_path: Path, gpu_baselines: Path,
                                                                         demo: str) -> None:
    """The same kernels at head dim 256 (_7: FlashAttention-3's 128 x 80 tile; _8: 128 x 64; two stages each):
    tasks/flash_attn_d256.yaml's test shapes (lengths 1 to 512 that no block divides, both masks) against the
    float64 reference, then timed at a 2048-long sequence, causal and not."""
    import torch

    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check
    from conftest import TASKS, judge_rungs

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    task = load_task(TASKS / "flash_attn_d256.yaml")
    bench = [{"B": 2, "H": 4, "S": 2048, "D": 256, "causal": c} for c in (False, True)]
    task = task.model_copy(update={"dsl": "cuda", "shapes": task.shapes.model_copy(update={"bench": bench})})
    v = check(task, DEMOS / f"{demo}.py", tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1,
              baseline_cache=gpu_baselines, rungs=judge_rungs())
    assert v.verdict == "pass", v.summary
    print(demo, "head dim 256:", v.rung("benchmark").message)


@pytest.mark.gpu
def test_gpu_the_wgmma_gemm_is_right_and_timed(tmp_path: Path, gpu_baselines: Path) -> None:
    """The wgmma gemm through the judging rungs on the GPU: every test shape (edges past the TMA box read as zero)
    against the float64 reference, then the timed calls at 4096^3 with their checks (a map made once per tensor
    serves every later call: cuda_api._tensor_map's cache must not hand one tensor's map to another)."""
    import torch

    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check
    from conftest import TASKS, judge_rungs

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    task = load_task(TASKS / "gemm_cuda.yaml")
    task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"bench": [{"M": 4096, "N": 4096, "K": 4096}]})})
    v = check(task, DEMOS / "gemm_cuda_5_wgmma.py", tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1,
              baseline_cache=gpu_baselines, rungs=judge_rungs())
    assert v.verdict == "pass", v.summary
    print("wgmma gemm 4096^3:", v.rung("benchmark").message)
