"""The dumps rung and the SASS summary: the gemm demo's dumps on the CPU (ahead-of-time sm_90a), the occupancy
bound against Nsight Compute's own numbers, and the per-kernel diff between iterations."""
from __future__ import annotations

import json

import pytest

from rungs.core.spec import load_task
from rungs.ladder import dumps as dumps_rung
from rungs.ladder.ladder import check
from rungs.ladder.sass import occupancy_bound, summarize_kernel, summary_diff, summary_table

from conftest import TASKS

STAGES = ("ttir", "ttgir", "ll", "ptx", "cubin", "sass", "json")


@pytest.fixture(scope="module")
def gemm_dumps(tmp_path_factory):
    """`harness check tasks/gemm.yaml tasks/demos/gemm_4_grouped.py --dumps-dir ...`, once for the module."""
    tmp = tmp_path_factory.mktemp("gemm4")
    verdict = check(load_task(TASKS / "gemm.yaml"), TASKS / "demos" / "gemm_4_grouped.py", tmp / "work",
                    dump_dir=tmp / "dumps", seeds=1)
    return verdict, tmp / "dumps"


def test_gemm_demo_writes_every_dump_and_finds_hgmma(gemm_dumps):
    verdict, dumps = gemm_dumps
    assert verdict.verdict == "pass", verdict.summary
    rung = verdict.rung("dumps")
    assert rung.status == "ok"
    kernels = sorted(p.stem for p in dumps.glob("*.cubin"))
    assert kernels and all(k.split(".")[0] == "matmul_kernel" for k in kernels)
    for k in kernels:
        for stage in STAGES:
            assert (dumps / f"{k}.{stage}").is_file(), f"{k}.{stage}"
    summary = (dumps / "summary.txt").read_text()
    assert "HGMMA.64x256x16.F32.BF16" in summary and "uses Hopper wgmma (HGMMA)" in summary
    assert rung.metrics["matrix_instructions"] > 0 and "HGMMA" in rung.details


def test_gemm_summary_reads_triton_metadata(gemm_dumps):
    _, dumps = gemm_dumps
    summaries = {s["kernel"]: s for s in json.loads((dumps / "summary.json").read_text())}
    big = next(s for s in summaries.values() if s["constexprs"].get("EVEN_K") and s["constexprs"]["BLOCK_N"] == 256)
    assert big["num_warps"] == 8 and big["num_stages"] == 4
    assert big["shared_dynamic_bytes"] == 4 * (128 * 64 + 64 * 256) * 2  # four stages of A and B tiles, bf16
    # the one test shape it served, and the two bench shapes the compile phase built it for (never ran it)
    assert big["shapes"] == [{"M": 256, "N": 256, "K": 256}, {"bench": "b00", "M": 4096, "N": 4096, "K": 4096},
                             {"bench": "b01", "M": 8192, "N": 8192, "K": 8192}]
    assert "timed at (bench): M=4096 N=4096 K=4096; M=8192 N=8192 K=8192" in (dumps / "summary.txt").read_text()
    assert big["families"].get("LDGSTS") and big["ldgsts_bytes"] == {"16": big["families"]["LDGSTS"]}
    assert big["occupancy"]["blocks_per_sm"] == 1 and "shared memory" in big["occupancy"]["limited_by"]
    spilled = [s for s in summaries.values() if s["spill_bytes"]]
    assert all(s["families"].get("LDL") or s["families"].get("STL") for s in spilled)


def test_dumps_rung_diffs_against_the_previous_iteration(gemm_dumps, tmp_path):
    _, dumps = gemm_dumps
    compiled = tmp_path / "compiled"
    compiled.mkdir()
    for f in dumps.iterdir():
        if f.suffix in (".cubin", ".json") and not f.name.startswith("summary"):
            (compiled / f.name).write_bytes(f.read_bytes())
    r = dumps_rung.rung(compiled, tmp_path / "again", dumps)
    assert r.status == "ok"
    change = r.details.split("change since the previous iteration:\n")[1].splitlines()
    assert change and all(line.endswith(": no change") for line in change), change
    assert "matmul_kernel: no change" in change


def test_summary_diff_says_what_changed_per_kernel():
    before = [{"kernel": "mm", "registers": 128, "spill_bytes": 0, "families": {"FFMA": 512}, "ldg_bytes": {4: 8},
               "constexprs": {"BLOCK_M": 64}, "verdict": "no matrix instructions"},
              {"kernel": "old", "registers": 10, "verdict": ""}]
    after = [{"kernel": "mm", "registers": 190, "spill_bytes": 0, "families": {"HGMMA": 4}, "ldg_bytes": {16: 8},
              "constexprs": {"BLOCK_M": 128}, "verdict": "uses Hopper wgmma (HGMMA)"},
             {"kernel": "epilogue", "registers": 32, "verdict": "nothing stands out"}]
    diff = summary_diff(before, after)
    assert diff.splitlines()[0] == ("mm: registers 128 -> 190, HGMMA 0 -> 4, FFMA 512 -> 0, LDG widths 8x4B -> 8x16B, "
                                    "BLOCK_M 64 -> 128")
    assert "epilogue: new kernel (32 registers, nothing stands out)" in diff and "old: gone" in diff
    assert summary_diff("a\nb", [summarize_kernel("mm", "")]).startswith("@@")  # an old text summary: a line diff


@pytest.mark.parametrize("registers, warps, shared, blocks, limited_by", [
    (38, 16, 64, 3, ["registers"]),  # ncu on the tuned softmax: Block Limit Registers 3
    (44, 8, 0, 5, ["registers"]),  # ncu on torch's randn kernel: Block Limit Registers 5
    (190, 8, 196608, 1, ["registers", "shared memory"]),
    (16, 1, 0, 32, ["blocks"]),
])
def test_occupancy_bound_matches_ncu(registers, warps, shared, blocks, limited_by):
    occ = occupancy_bound(registers, warps, shared)
    assert occ["blocks_per_sm"] == blocks and occ["limited_by"] == limited_by


def test_summarize_kernel_on_sass_text():
    sass = "\n".join([
        "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;",
        "        /*0010*/                   LDG.E.128 R8, desc[UR4][R2.64+0x10] ;",
        "        /*0020*/              @!P0 STL [R1], R4 ;",
        "        /*0030*/                   LDL R5, [R1] ;",
        "        /*0040*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;",
        "        /*0050*/                   UTMALDG.2D [UR8], [UR4] ;",
        "        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;",
        "        /*0070*/                   STG.E.64 desc[UR4][R2.64], R4 ;",
    ])
    s = summarize_kernel("k", sass, {"registers": 168, "stack": 16, "shared": 1024, "local": 0},
                         {"num_warps": 4, "num_stages": 3, "shared": 65536, "constexprs": {"BLOCK": 128}})
    assert s["matrix"] == {"HGMMA.64x128x16.F32.BF16": 1} and s["ldg_bytes"] == {16: 2} and s["stg_bytes"] == {8: 1}
    assert s["spill_bytes"] == 16 and s["shared_bytes"] == 65536 + 1024
    assert "uses Hopper wgmma (HGMMA)" in s["verdict"] and "TMA loads" in s["verdict"] and "register spills" in s["verdict"]
    table = summary_table([s])
    assert table.startswith("k  [BLOCK=128; 4 warps, 3 stages]") and "16 B spilled" in table


def test_bench_shape_specializations_are_dumped_and_shown_first(tmp_path):
    """The lean softmax task timed at N=8192: the row-wise demo's BLOCK=next_power_of_2(N) is a specialization no
    test shape (N=7) compiles. The compile phase builds it on hollow inputs (never runs it), the dumps show it, and
    the pass prompt's dumps section puts it first."""
    import sys

    sys.path.insert(0, str(TASKS.parent / "tests"))
    from harness.feedback import largest_first
    from lean import LEAN_YAML, lean_task
    from rungs.ladder.ladder import Ladder
    from rungs.ladder.rung import rung

    task_file, _ = lean_task(tmp_path / "task", [])
    task_file.write_text(LEAN_YAML.replace("{M: 32768, N: 8}", "{M: 32768, N: 8192}"))
    climb = Ladder(task=load_task(task_file), kernel=TASKS / "demos" / "softmax_3_rowwise.py", work_dir=tmp_path / "w",
                   dump_dir=tmp_path / "dumps", rungs=[rung("precheck"), rung("compile"), rung("dumps")])
    verdict = climb.climb()
    assert verdict.rung("compile").status == "ok", verdict.rung("compile").message
    summaries = {s["constexprs"]["BLOCK"]: s for s in json.loads((tmp_path / "dumps" / "summary.json").read_text())}
    assert summaries[8]["shapes"] == [{"M": 4, "N": 7}]
    assert summaries[8192]["shapes"] == [{"bench": "b00", "M": 32768, "N": 8192}]
    details = verdict.rung("dumps").details
    assert "timed at (bench): M=32768 N=8192" in details
    assert largest_first(details).startswith("softmax_kernel.1  [BLOCK=8192")


def _fp32_gemm_dumps(tmp_path, kernel, bench):
    """precheck, compile (the test shapes, then the bench shapes on hollow inputs) and dumps of a float32 gemm."""
    import shutil

    from test_dot_precision import FP32_GEMM
    from rungs.ladder.ladder import Ladder
    from rungs.ladder.rung import rung

    shutil.copy(TASKS / "gemm_ref.py", tmp_path / "gemm_ref.py")
    text = FP32_GEMM.format(dtype="float32").replace("    - {M: 1024, N: 1024, K: 1024}\n",
                                                     "".join(f"    - {b}\n" for b in bench))
    (tmp_path / "gemm_fp32.yaml").write_text(text)
    climb = Ladder(task=load_task(tmp_path / "gemm_fp32.yaml"), kernel=kernel, work_dir=tmp_path / "w",
                   dump_dir=tmp_path / "dumps", rungs=[rung("precheck"), rung("compile"), rung("dumps")])
    verdict = climb.climb()
    assert verdict.rung("compile").status == "ok", verdict.rung("compile").message
    summaries = {pairs_of(s): s for s in json.loads((tmp_path / "dumps" / "summary.json").read_text())}
    return verdict.rung("dumps"), summaries


def pairs_of(s):
    return "; ".join(" ".join(f"{k}={v}" for k, v in sh.items() if k != "bench") for sh in s["shapes"] if "bench" in sh)


def test_16_byte_check_counts_every_load_kind_and_says_when_the_shape_rules_it_out(tmp_path):
    """Issue 39 item 4, on sm_90a builds: a gemm whose tiles come through 16-byte cp.async copies (LDGSTS.128) and
    whose scale through one 4-byte LDG was flagged 'no 16 B vectors' (plain LDG alone was counted); at a bench shape
    of sizes no multiple of 16 (K=999) nothing can be 16 bytes, and the dumps say it is the shape's doing."""
    from conftest import KERNELS

    rung_result, by_shape = _fp32_gemm_dumps(tmp_path, KERNELS / "gemm_fp32_scaled.py",
                                             ["{M: 1024, N: 1024, K: 1024}", "{M: 1000, N: 1000, K: 999}"])
    aligned, odd = by_shape["M=1024 N=1024 K=1024"], by_shape["M=1000 N=1000 K=999"]
    assert aligned["ldg_bytes"] == {"4": 1} and aligned["ldgsts_bytes"] == {"16": 24}, aligned
    assert aligned["unaligned_args"] == [] and "16 B" not in aligned["verdict"], aligned["verdict"]
    assert odd["unaligned_args"] == ["M", "N", "K"] and not odd["ldgsts_bytes"].get("16")
    assert ("global loads <= 4 B per thread, none 16 B (LDG, LDGSTS, TMA): at this shape M, N, K are not multiples "
            "of 16, so Triton cannot prove 16-byte alignment (the shape's doing, not the kernel's)") in odd["verdict"]
    assert "16 B loads ruled out by the shape in 1/2" in rung_result.message
    assert "no 16 B global loads" not in rung_result.message, rung_result.message


def test_summary_speaks_of_the_bench_shape_builds(tmp_path):
    """The summary is specialised at the bench shapes: the timed builds come first and lead the rung's line; a build
    for test shapes only says so and carries no speed notes (its 4-byte loads at K=79 are not the timed kernel's)."""
    from conftest import KERNELS

    rung_result, _ = _fp32_gemm_dumps(tmp_path, KERNELS / "gemm_fp32_scaled.py", ["{M: 1024, N: 1024, K: 1024}"])
    text = (tmp_path / "dumps" / "summary.txt").read_text()
    blocks = text.split("\n\n")
    assert "timed at (bench): M=1024 N=1024 K=1024" in blocks[0] and "also compiled for (test): M=64 N=128 K=96" in blocks[0]
    assert ("compiled for the test shapes only, not timed (the timed builds come first): M=47 N=63 K=79"
            in blocks[1]), text
    assert "16 B" not in blocks[1].split("=>")[1] and "warps per SM" not in blocks[1].split("=>")[1]
    assert rung_result.message.startswith("2 kernel build(s), 1 at the bench shapes (the rest for test shapes only)")


def test_kernelbench_dumps_show_the_bench_shape(tmp_path, monkeypatch):
    """A KernelBench problem (ModelNew, built per input signature) is compiled at its bench shape too: the worker
    builds ModelNew there on the meta device, without weights, and the summary says `timed at (bench)` with the
    problem's own sizes, not only the test shapes' (issue 39 item 4)."""
    from harness.kernelbench import load_problem
    from rungs.ladder.ladder import Ladder
    from rungs.ladder.rung import rung

    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    kb = TASKS.parent / "tests" / "kernelbench_format"
    task = load_problem(kb / "level2" / "9_gemm_scale_tanh.py")
    climb = Ladder(task=task, kernel=kb / "solutions" / "9_gemm_scale_tanh.py", work_dir=tmp_path / "w",
                   dump_dir=tmp_path / "dumps", rungs=[rung("precheck"), rung("compile"), rung("dumps")])
    verdict = climb.climb()
    assert verdict.rung("compile").status == "ok", verdict.rung("compile").message
    text = (tmp_path / "dumps" / "summary.txt").read_text()
    assert text.startswith("gemm_scale_tanh_kernel  [BLOCK_M=32 BLOCK_N=64 BLOCK_K=32; 4 warps, 3 stages]\n"
                           "  timed at (bench): batch_size=256 in_features=512 out_features=1024\n"), text
    assert "compiled for the test shapes only, not timed" in text
    assert "no 16 B" not in verdict.rung("dumps").message


def test_wide_copies_count_as_16_byte_loads_in_sass_text():
    """TMA and bulk copies are 16-byte-wide loads for the check; a narrow LDG beside them is not a finding."""
    sass = "\n".join([
        "        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;",
        "        /*0010*/                   UTMALDG.2D [UR8], [UR4] ;",
        "        /*0020*/                   UBLKCP.S.G [UR8], [UR4], R4 ;",
    ])
    s = summarize_kernel("k", sass, meta={"not_16_aligned": []})
    assert s["families"]["UBLKCP"] == 1 and "16 B" not in s["verdict"] and "TMA loads" in s["verdict"]
    narrow = summarize_kernel("k", sass.splitlines()[0], meta={"not_16_aligned": []})
    assert "though every pointer and integer argument is a multiple of 16 here: a layout that does not vectorize" \
        in narrow["verdict"]


def test_a_bench_shapes_description_is_kept_until_the_makers_folder_changes(tmp_path, monkeypatch):
    """The compile phase's bench-shape build needs each input's shape, stride and dtype: the input maker run on the
    meta device, whose first op in a process imports torch._dynamo (1.5-2 CPU-s). The description is kept in the
    harness cache, keyed by the entry and every Python file beside the maker: run again, the maker is not called;
    a helper beside it edited, it is."""
    from rungs.ladder.hollow import hollow_spec

    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    task = tmp_path / "task"
    task.mkdir()
    (task / "helper.py").write_text("ROWS = 3\n")
    (task / "ref.py").write_text(
        "import os, sys, torch\n"
        "sys.path.insert(0, os.path.dirname(__file__))\n"
        "def make_inputs(shape, dtype, seed, dist):\n"
        "    import helper\n"
        "    open(os.path.join(os.path.dirname(__file__), 'calls'), 'a').write('x')\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return (torch.randn(helper.ROWS, shape['N'], generator=g).to(dtype).t(), 4)\n")
    entry = {"id": "b00", "shape": {"N": 5}, "dtype": "float16", "seed": 1, "dist": "normal",
             "inputs": f"{task / 'ref.py'}:make_inputs"}
    want = [{"shape": [5, 3], "stride": [1, 5], "dtype": "float16"}, {"value": 4}]
    assert hollow_spec(entry) == want
    assert hollow_spec(entry) == want
    assert (task / "calls").read_text() == "x"  # the second from the cache
    assert hollow_spec({**entry, "shape": {"N": 6}})[0]["shape"] == [6, 3]  # another shape is another key
    (task / "calls").unlink()  # a file that is not Python is not in the key
    assert hollow_spec(entry) == want and not (task / "calls").exists()
    elsewhere = tmp_path / "copy"  # the same files in another folder (each test has a copy of its own): kept
    __import__("shutil").copytree(task, elsewhere)
    assert hollow_spec({**entry, "id": "b01", "inputs": f"{elsewhere / 'ref.py'}:make_inputs"}) == want
    assert not (elsewhere / "calls").exists()
    (task / "helper.py").write_text("ROWS = 2\n")
    sys_modules = __import__("sys").modules
    sys_modules.pop("helper", None)
    assert hollow_spec(entry)[0] == {"shape": [5, 2], "stride": [1, 5], "dtype": "float16"}


def test_the_bench_shape_build_leaves_its_hollow_memory_untouched():
    """The compile phase builds the entry at the bench shapes on hollow inputs (pages nobody touches). In the judged
    state torch fills fresh memory with NaN: at KernelBench's sizes that wrote 12.8 GB for one elementwise problem
    (35 s of its 2 s on this CPU, and `eval -j 2` killed for memory). The build runs without the fill and puts it
    back after."""
    import torch

    from rungs.worker.candidate import deterministic, judged_state
    from rungs.worker.compile_phase import Launches, _compile_bench_shapes
    from rungs.worker.job import Job

    seen: dict[str, object] = {}

    def entry(x):  # looked at after the build: torch compute inside it is refused
        seen["fill"] = torch.utils.deterministic.fill_uninitialized_memory
        seen["out"] = torch.empty(SIZE)  # fresh memory (pages of its own), as the entry's own output is
        seen["x"] = x

    # 64 MB. The memory may be new zero pages or a block another test in the process freed (garbage, a stray NaN among
    # it: seen under -n 2, at 4 MB and once at 64 MB): torch's fill would have made every element NaN, so that is
    # what is checked, not that none is.
    SIZE = 1 << 24
    job = Job(timeout_s=60, dump_bench=[{"id": "b000", "shape": {"N": SIZE},
                                         "spec": [{"shape": [SIZE], "stride": [1], "dtype": "float32"}]}])
    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    judged_state()
    try:
        assert torch.empty(64).isnan().all()  # the judged state's fill, as the run phase has it
        assert _compile_bench_shapes(entry, job, Launches(), "cpu") is None
        assert seen["fill"] is False
        assert not seen["out"].isnan().all() and not seen["x"].isnan().all()
        assert torch.utils.deterministic.fill_uninitialized_memory  # back for what follows
    finally:
        deterministic(before[0])
        torch.utils.deterministic.fill_uninitialized_memory = before[1]


def test_a_cubin_disassembled_before_is_read_from_the_cache(gemm_dumps, tmp_path, monkeypatch):
    """The same bytes (the worker folder's random name aside, which the line table holds) are disassembled once:
    the second listing comes from the harness cache and no tool runs; another cubin is disassembled anew."""
    import re
    import subprocess

    _, dumps = gemm_dumps
    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    first, other = sorted(dumps.glob("*.cubin"))[:2]
    data = first.read_bytes()
    names = set(re.findall(rb"harness-worker-[a-z0-9_]{8}", data))
    assert names, "the cubin names the worker's folder (its line table): the cache key must leave it out"
    a = tmp_path / "a" / first.name
    a.parent.mkdir()
    a.write_bytes(data)
    sass, usage = dumps_rung.disassemble(a)
    assert "Function : matmul_kernel" in sass and usage
    assert len(list((tmp_path / "cache" / "sass").glob("*.txt"))) == 1

    rebuilt = tmp_path / "b" / first.name  # the same kernel built by another worker, in a folder of another name
    rebuilt.parent.mkdir()
    rebuilt.write_bytes(re.sub(rb"harness-worker-[a-z0-9_]{8}", b"harness-worker-zz9_zz9_", data))
    assert rebuilt.read_bytes() != data
    real_run = subprocess.run

    def no_tool(*args, **kwargs):
        raise AssertionError("cuobjdump ran for bytes already disassembled")

    monkeypatch.setattr(dumps_rung.subprocess, "run", no_tool)
    assert dumps_rung.disassemble(rebuilt) == (sass, usage)
    nested = tmp_path / "c" / first.name  # built in `harness eval -j N`: the worker's folder inside the eval's own
    nested.parent.mkdir()
    nested.write_bytes(re.sub(rb"harness-worker-[a-z0-9_]{8}", b"harness-eval-q1w2e3r4/harness-worker-zz9_zz9_", data))
    assert dumps_rung.disassemble(nested) == (sass, usage)

    monkeypatch.setattr(dumps_rung.subprocess, "run", real_run)
    other_sass, _ = dumps_rung.disassemble(other)
    assert other_sass != sass
    assert len(list((tmp_path / "cache" / "sass").glob("*.txt"))) == 2
