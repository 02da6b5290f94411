"""The profile rung: parsing Nsight Compute's details CSV (real files recorded on an H200), running ncu through
the sandbox (a stand-in ncu on the CPU), the cache, the get_profile tool; on a GPU, the real thing."""
from __future__ import annotations

import csv
import io
import os
import json
import stat
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness.tools import get_profile
from rungs.core.result import RungResult
from rungs.ladder import profile
from rungs.ladder.benchmark import bench_entries
from rungs.ladder.ladder import Ladder
from rungs.ladder.profile import NcuParseError, parse_details_csv, summarize_launch
from rungs.worker.job import Job
from rungs.sandbox.pool import JobOutcome

from conftest import TASKS, judge_rungs
from rungs.ladder.rung import rung

DATA = Path(__file__).resolve().parent / "data" / "ncu"
SOFTMAX_CSV = DATA / "ncu_softmax_details.csv"
MATMUL_CSV = DATA / "ncu_matmul_details.csv"


def csv_value(path: Path, section: str, metric: str) -> float:
    """A metric read straight from the file, to hold the parser to."""
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row["Section Name"] == section and row["Metric Name"] == metric:
            return float(row["Metric Value"].replace(",", ""))
    raise KeyError(metric)


def summary_of(path: Path) -> dict:
    launches = parse_details_csv(path.read_text())
    assert len(launches) == 1
    return summarize_launch(launches[0])


# ---- the parser, on real output ------------------------------------------------------------------------------------
def test_softmax_is_memory_bound_with_high_dram_throughput():
    s = summary_of(SOFTMAX_CSV)
    sol = "GPU Speed Of Light Throughput"
    dram = csv_value(SOFTMAX_CSV, sol, "DRAM Throughput")
    assert 75 <= dram <= 100  # the recorded file: a tuned softmax streams at 85% of DRAM peak
    assert s["kernel"] == "softmax_kernel"
    assert s["bound"] == "memory-bound" and s["limiting_unit"] == "DRAM"
    assert s["dram_throughput_pct"] == pytest.approx(dram)
    assert s["sm_throughput_pct"] == pytest.approx(csv_value(SOFTMAX_CSV, sol, "Compute (SM) Throughput"))
    assert s["sm_throughput_pct"] < s["dram_throughput_pct"]
    bytes_moved = 2 * 4 * 32768 * 8192
    assert s["dram_gbps"] == pytest.approx(bytes_moved / (s["duration_us"] * 1e-6) / 1e9, rel=0.05)
    assert s["duration_us"] == pytest.approx(csv_value(SOFTMAX_CSV, sol, "Duration") / 1e3)


def test_softmax_stalls_occupancy_and_launch():
    s = summary_of(SOFTMAX_CSV)
    assert s["stalls"][0]["reason"] == "long_scoreboard" and s["stalls"][0]["cycles"] == pytest.approx(18.9)
    assert s["cycles_per_issue"] == pytest.approx(46.15)
    assert s["theoretical_occupancy_pct"] == pytest.approx(75) and s["achieved_occupancy_pct"] == pytest.approx(69.49)
    assert s["theoretical_warps_per_sm"] == pytest.approx(48) and s["achieved_warps_per_sm"] == pytest.approx(44.47)
    assert s["occupancy_limited_by"] == ["registers"]
    assert s["registers_per_thread"] == 38
    assert s["shared_per_block_bytes"] == {"static": 0, "dynamic": 64, "driver": 1024}
    assert s["block"] == "(512, 1, 1)" and s["grid"] == "(32768, 1, 1)"
    assert s["advice"][0].startswith("INF SOLBottleneck")
    assert not any("optional metric" in a for a in s["advice"])
    text = profile.summary_text([s])
    assert "memory-bound (DRAM)" in text and "long scoreboard" in text and "69% achieved / 75% theoretical" in text


def test_cublas_matmul_is_compute_bound_on_the_tensor_pipe():
    s = summary_of(MATMUL_CSV)
    sol = "GPU Speed Of Light Throughput"
    assert s["kernel"].startswith("nvjet_sm90")  # cuBLAS's Hopper GEMM
    sm = csv_value(MATMUL_CSV, sol, "Compute (SM) Throughput")
    assert 80 <= sm <= 100 and s["sm_throughput_pct"] == pytest.approx(sm)
    assert s["bound"] == "compute-bound" and s["limiting_unit"].startswith("Tensor pipeline")
    assert s["dram_throughput_pct"] == pytest.approx(csv_value(MATMUL_CSV, sol, "DRAM Throughput"))
    assert s["dram_throughput_pct"] < 50
    flops = 2 * 4096**3
    assert 600 < flops / (s["duration_us"] * 1e-6) / 1e12 < 900  # TFLOP/s: what cuBLAS reaches on an H200
    assert s["stalls"][0]["reason"] == "barrier"
    assert s["theoretical_occupancy_pct"] == pytest.approx(csv_value(MATMUL_CSV, "Occupancy", "Theoretical Occupancy"))
    assert s["achieved_occupancy_pct"] == pytest.approx(csv_value(MATMUL_CSV, "Occupancy", "Achieved Occupancy"))
    assert s["achieved_occupancy_pct"] <= s["theoretical_occupancy_pct"]
    assert set(s["occupancy_limited_by"]) == {"registers", "shared mem"}
    assert s["registers_per_thread"] == 168 and s["shared_per_block_bytes"]["dynamic"] > 200 * 1024


def test_stall_metrics_take_precedence_over_rule_text():
    lines = SOFTMAX_CSV.read_text().splitlines()
    row = lines[-1].split('","')
    extra = []
    for reason, value in (("long_scoreboard", "20.5"), ("barrier", "3.25"), ("selected", "1"), ("wait", "4.5")):
        cells = row[:11] + ["Command line profiler metrics",
                            f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio", "", value]
        extra.append('","'.join(cells) + '",')
    s = summarize_launch(parse_details_csv("\n".join(lines + extra))[0])
    assert [st["reason"] for st in s["stalls"]] == ["long_scoreboard", "wait", "barrier"]  # "selected" is not a stall
    assert s["stalls"][0]["cycles"] == 20.5


@pytest.mark.parametrize("text, expect", [
    ("", "the output is empty"),
    ("==PROF== Connected to process 1\n==ERROR== something broke\n", "no ncu details table"),
    ('"ID","Kernel Name","Metric Value"\n"0","k","1"\n', "lacks the column"),
    ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
     '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n', "no kernel was profiled"),
    ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
     '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n"0","1","p"\n', "row 2"),
])
def test_malformed_csv_is_a_clear_error(text, expect):
    with pytest.raises(NcuParseError, match=expect):
        parse_details_csv(text)


def test_truncated_real_file_still_parses_what_is_there():
    lines = SOFTMAX_CSV.read_text().splitlines()
    s = summarize_launch(parse_details_csv("\n".join(lines[:10]))[0])
    assert s["dram_throughput_pct"] is not None and s["achieved_occupancy_pct"] is None and s["stalls"] == []


@pytest.mark.parametrize("output, expect", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters",
     "may not read the GPU's performance counters"),
    ("==ERROR== Failed to initialize the profiler: LibraryNotLoaded", "LibraryNotLoaded"),
    ("==PROF== Disconnected from process 9\n==WARNING== No kernels were profiled.", "profiled no kernel"),
    ("==ERROR== The application returned an error code (1).", "The application returned an error code"),
    ("all fine", None),
])
def test_ncu_problems_are_named(output, expect):
    problem = profile.ncu_problem(output)
    assert problem is None if expect is None else expect in problem


def test_ncu_options_profile_every_kernel_of_the_witnessed_call():
    """No kernel-name filter: a foreign kernel (cuBLAS, aten) in the witnessed call must show, to be refused."""
    opts = profile.ncu_options()
    assert "--kernel-name" not in opts and opts[opts.index("--launch-count") + 1] == str(profile.MAX_LAUNCHES)
    assert opts[opts.index("--clock-control") + 1] == "none" and "--profile-from-start" in opts
    assert [opts[i + 1] for i, o in enumerate(opts) if o == "--section"] == list(profile.SECTIONS)
    assert "--metrics" in opts and "--metrics" not in profile.ncu_options(stall_metrics=False)
    assert opts[-5:] == ["--csv", "--page", "details", "--print-units", "base"]


def test_the_kernel_filter_names_what_ncu_sees_or_nothing():
    """TileLang's `gemm` runs as `gemm_kernel` and a CuTe host function as `kernel_cutlass_...`: the device
    functions are the filter. A kernel the harness renamed (its name not in the source) would match nothing: on the
    H200 ncu then profiled no kernel of a CUDA C++ flash attention named f"attention_d{d}". Then no filter."""
    tilelang = {"kernels": [{"name": "gemm", "functions": ["gemm_kernel"]}, {"name": "gemm.1", "functions": ["gemm_kernel"]}]}
    assert profile.kernel_filter(tilelang) == ["gemm_kernel"]
    assert profile.kernel_filter({"kernels": [{"name": "softmax_kernel"}, {"name": "softmax_kernel.1"}]}) == ["softmax_kernel"]
    assert profile.kernel_filter({"kernels": [{"name": "gemm_mma"}, {"name": "unnamed_kernel_1"}]}) is None  # the rung fails
    assert profile.kernel_filter({"kernels": []}) is None and profile.kernel_filter({"kernels": [{}]}) is None
    renamed = {"unnamed_kernel_1": ["gemm_64x128", "gemm_64x128_kernel"]}  # what the worker called it (never shown)
    assert profile.kernel_filter({"kernels": [{"name": "gemm_mma"}, {"name": "unnamed_kernel_1"}]}, renamed) == [
        "gemm_64x128", "gemm_64x128_kernel", "gemm_mma"]


def test_reported_names_are_the_sources_or_renamed(tmp_path):
    """A kernel's name reaches prompts: only names of the source (or one with a number after it, a name made per
    head dimension) pass; device function names must hold a name of the source."""
    from rungs.sandbox.pool import _accept_names, kernel_names

    kernel = tmp_path / "k.py"
    kernel.write_text('K = {d: compile_cuda(SRC, f"attention_d{d}") for d in (64, 128)}\n@T.prim_func\ndef softmax_rows(): pass\n'
                      'unnamed_kernel_7 = 1\n')
    phase = {"kernels": [{"name": "attention_d128"}, {"name": "sk_live_4242"},
                         {"name": "softmax_rows", "functions": ["softmax_rows_kernel", "sk_live_4242_kernel", "a b"]},
                         {"name": "unnamed_kernel_7"}]}  # the harness's own name, though the source holds it
    compiled = tmp_path / "compiled"
    compiled.mkdir()
    for stem in ("attention_d128", "sk_live_4242", "softmax_rows", "stray", "softmax_rows.words of a message"):
        (compiled / f"{stem}.cubin").write_bytes(b"")
    renamed: dict = {}
    out = _accept_names(phase, set(kernel_names(kernel)), tmp_path, renamed)
    assert [k["name"] for k in out["kernels"]] == ["attention_d128", "unnamed_kernel_1", "softmax_rows", "unnamed_kernel_3"]
    # kept apart for the profile's launch check
    assert renamed == {"unnamed_kernel_1": ["sk_live_4242"], "unnamed_kernel_3": ["unnamed_kernel_7"]}
    # each reported kernel keeps its dumps (a name made per head dimension too, found on the H200), under that name
    assert sorted(f.name for f in compiled.iterdir()) == ["attention_d128.cubin", "softmax_rows.cubin",
                                                          "unnamed_kernel_1.cubin"]
    assert out["kernels"][2]["functions"] == ["softmax_rows_kernel"]


# ---- the rung with a stand-in ncu (CPU) -----------------------------------------------------------------------------
WORKER_RAN = ("import json as _j, os as _o\n"
              "open(_o.path.dirname(sys.argv[-1]) + '/phase-witness.json', 'w').write(_j.dumps({'ok': True}))\n")
"""What the witnessed worker leaves when it finished (the stand-in runs no worker: it needs a GPU)."""


def fake_ncu(tmp_path: Path, body: str, worker_ran: bool = True) -> str:
    exe = tmp_path / "bin" / "ncu"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!{sys.executable}\nimport sys\n{WORKER_RAN if worker_ran else ''}{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def gpu_ladder(task, tmp_path: Path) -> Ladder:
    ladder = Ladder(task=task, kernel=TASKS / "demos" / "softmax_4_tuned.py", work_dir=tmp_path / "work",
                    dump_dir=tmp_path / "dumps", profile_cache=tmp_path / "cache", device="cuda")
    ladder.job_dir = tmp_path / "work" / "job"
    ladder.job = Job(bench=bench_entries(task))
    ladder.compiled = {"kernels": [{"name": "softmax_kernel"}, {"name": "softmax_kernel.1"}]}
    ladder.outcome = JobOutcome(phases={"bench": {"ok": True, "cases": [{"gpu": "NVIDIA H200"}]}})
    return ladder


def test_rung_runs_ncu_in_the_sandbox_keeps_the_csv_and_caches(softmax_task, tmp_path, monkeypatch):
    # The stand-in runs in the sandbox like ncu: it may write only the profile's own folder (the one holding the
    # job file it is given), and sees nothing of the checkout but rungs/, so the CSV travels inside its source.
    job_folder = tmp_path / "work" / "job" / "profile"
    ncu = fake_ncu(tmp_path, "import os\nd = os.path.dirname(sys.argv[-1])\n"
                             "open(d + '/argv.txt', 'w').write('\\n'.join(sys.argv[1:]))\n"
                             "open(d + '/env.txt', 'w').write(' '.join(os.environ))\n"
                             f"sys.stdout.write({SOFTMAX_CSV.read_text()!r})")
    argv_file = job_folder / "argv.txt"
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
    monkeypatch.setenv("SOME_API_KEY", "sk-secret")
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "ok", r.message
    assert r.message.startswith("softmax_kernel: memory-bound (DRAM): DRAM 85% of peak")
    assert r.metrics["bound"] == "memory-bound" and r.metrics["cached"] is False
    argv = argv_file.read_text().splitlines()
    assert "SOME_API_KEY" not in (job_folder / "env.txt").read_text().split()  # the sandbox's scrubbed environment
    # a worker waiting for its job, as every pre-started worker is, its own output sent away from ncu's
    assert "--kernel-name" not in argv and argv[-6:-1] == ["-m", "rungs.worker", "--wait", "cuda",
                                                           "rungs.backends.triton_worker"]
    assert argv[argv.index("/bin/sh") + 1:argv.index("/bin/sh") + 4] == ["-c", 'exec "$@" >"$0" 2>&1',
                                                                         str(job_folder / "target.log")]
    job = json.loads((job_folder / "job.json").read_text())
    assert job["phases"] == ["witness"] and 3 <= job["witness"]["call"] < 3 + 12 and job["fresh_seed"] > 0
    dumps = tmp_path / "dumps"
    assert (dumps / "profile.csv").read_text().startswith('"ID","Process ID"')
    assert "memory-bound" in (dumps / "profile.txt").read_text()
    assert len(list((tmp_path / "cache").glob("*.csv"))) == 1

    monkeypatch.setattr(profile, "find_ncu", lambda: pytest.fail("a cached profile must not run ncu"))
    again = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert again.status == "ok" and again.metrics["cached"] is True and again.message.endswith("[cached]")


def test_rung_skips_without_ncu_or_counters(softmax_task, tmp_path, monkeypatch):
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "skip" and "not installed" in r.message
    ncu = fake_ncu(tmp_path, "print('==PROF== Connected to process 1')\n"
                             "print('==ERROR== ERR_NVGPUCTRPERM - The user does not have permission', file=sys.stderr)\n"
                             "sys.exit(1)")
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "skip" and "ERR_NVGPUCTRPERM" in r.message
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("*.csv"))


def test_rung_retries_without_stall_metrics_an_ncu_lacks(softmax_task, tmp_path, monkeypatch):
    ncu = fake_ncu(tmp_path, "if '--metrics' in sys.argv:\n"
                             "    print('==ERROR== Failed to find metric smsp__average_warps_issue_stalled_x'); sys.exit(1)\n"
                             f"sys.stdout.write(open({str(SOFTMAX_CSV)!r}).read())")
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "ok" and r.metrics["bound"] == "memory-bound"


def test_the_retry_a_candidate_can_ask_for_starts_from_a_fresh_folder(softmax_task, tmp_path, monkeypatch):
    """ncu's output holds the target's, so a candidate can print the metric error that makes the rung run ncu again.
    The first run leaves a link and a forged job file (a bench input naming a private host folder, which would be
    bind-mounted into the second sandbox); the second run must find neither, nor see that folder."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "marker").write_text("host data")
    ncu = fake_ncu(tmp_path, "import os, json\nd = os.path.dirname(sys.argv[-1])\njob = d + '/job.json'\n"
                             "if '--metrics' in sys.argv:\n"
                             "    os.symlink('/etc/hostname', d + '/leak')\n"
                             f"    j = json.load(open(job)); j['bench'][0]['inputs'] = {str(private / 'x.py')!r} + ':f'\n"
                             "    json.dump(j, open(job, 'w'))\n"
                             "    print('==ERROR== Failed to find metric smsp__average_warps_issue_stalled_x'); sys.exit(1)\n"
                             "seen = {'leak': os.path.lexists(d + '/leak'), 'inputs': json.load(open(job))['bench'][0]['inputs'],\n"
                             f"        'private': os.path.exists({str(private / 'marker')!r})}}\n"
                             "open(d + '/seen.json', 'w').write(json.dumps(seen))\n"
                             f"sys.stdout.write({SOFTMAX_CSV.read_text()!r})")
    monkeypatch.setattr(profile, "find_ncu", lambda: ncu)
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "ok", r.message
    seen = json.loads((tmp_path / "work" / "job" / "profile" / "seen.json").read_text())
    assert seen == {"leak": False, "inputs": bench_entries(softmax_task)[0]["inputs"], "private": False}


def test_rung_turns_an_ncu_without_a_table_into_a_skip_with_the_reason(softmax_task, tmp_path, monkeypatch):
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, "print('==PROF== nothing')"))
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "skip" and "ncu exited with code 0 and no details table" in r.message


@pytest.mark.parametrize("body, expect", [
    # the forged-witness class: a CSV header printed ahead of ncu's own table made the real launch parse as empty
    ("print('\"ID\",\"Kernel Name\",\"Metric Value\"')\n" f"sys.stdout.write({SOFTMAX_CSV.read_text()!r})",
     "does not start with its one header row"),
    ("print('hello from the candidate')\n" f"sys.stdout.write({SOFTMAX_CSV.read_text()!r})",
     "neither ncu's message nor its table"),
    ("print('\"ID\",\"Kernel Name\",\"Metric Value\"')", "lacks the column"),
])
def test_a_witness_report_that_is_not_ncus_alone_voids_the_witness(softmax_task, tmp_path, monkeypatch, body,
                                                                   expect):
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, body))
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "fail" and expect in r.message and "the witness is void" in r.message


def test_a_candidate_that_fails_under_its_witness_fails(softmax_task, tmp_path, monkeypatch):
    """ncu ran but the witnessed worker left no phase (it died, or broke ncu's run): not accepted unwitnessed."""
    body = "print('==ERROR== The application returned an error code (6).')\nsys.exit(6)"
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, body, worker_ran=False))
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "fail" and "the candidate failed under the witness" in r.message, r.message
    nothing = "print('==PROF== Disconnected from process 9')\nprint('==WARNING== No kernels were profiled.')"
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, nothing))
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "fail" and "launched no kernel" in r.message, r.message


def test_library_compute_in_the_witnessed_call_fails_naming_the_kernel(softmax_task, tmp_path, monkeypatch):
    """A softmax 'kernel' whose witnessed call launched cuBLAS's GEMM (the recorded torch.matmul profile): foreign
    compute, refused from outside the candidate's process whatever its op trace said."""
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, f"sys.stdout.write({MATMUL_CSV.read_text()!r})"))
    r = profile.rung(gpu_ladder(softmax_task, tmp_path))
    assert r.status == "fail" and "which is not one of the candidate's compiled kernels (softmax_kernel)" in r.message
    assert "library compute" in r.message


def test_a_kernel_named_outside_its_source_does_not_switch_the_launch_check_off(softmax_task, tmp_path, monkeypatch):
    """A kernel whose name is not in the candidate's source is renamed (unnamed_kernel_N: a name could carry out
    what it read elsewhere), and the profile then had no name to hold ncu's launches to: a candidate could name its
    kernel so on purpose and launch cuBLAS unseen. The names the worker gave it now count, kept out of sight: cuBLAS
    beside it fails; its own launch passes, shown under the harness's name, not the claimed one."""
    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, f"sys.stdout.write({MATMUL_CSV.read_text()!r})"))
    ladder = gpu_ladder(softmax_task, tmp_path)
    ladder.compiled = {"kernels": [{"name": "unnamed_kernel_0"}]}
    ladder.outcome.renamed = {"unnamed_kernel_0": ["softmax_x_1_2"]}
    r = profile.rung(ladder)
    assert r.status == "fail" and "not one of the candidate's compiled kernels (unnamed_kernel_0)" in r.message, r.message
    assert "softmax_x_1_2" not in r.message

    ladder.outcome.renamed = {}  # renamed with no name of its own (a forged entry): no check possible, so a fail
    r = profile.rung(ladder)
    assert r.status == "fail" and "no kernel name" in r.message, r.message

    monkeypatch.setattr(profile, "find_ncu", lambda: fake_ncu(tmp_path, f"sys.stdout.write({SOFTMAX_CSV.read_text()!r})"))
    ladder = gpu_ladder(softmax_task, tmp_path / "own")
    ladder.compiled = {"kernels": [{"name": "unnamed_kernel_0"}]}
    ladder.outcome.renamed = {"unnamed_kernel_0": ["softmax_kernel"]}
    r = profile.rung(ladder)
    assert r.status == "ok" and r.metrics["kernels_checked"], r.message
    assert r.message.startswith("unnamed_kernel_0: memory-bound") and "softmax_kernel" not in r.message, r.message
    assert "softmax_kernel" not in (tmp_path / "own" / "dumps" / "profile.csv").read_text()
    # a mangled claim is masked as ncu prints it too
    assert profile._masked('"secret42k(float *)","1"', {"unnamed_kernel_0": ["_Z9secret42kPf"]}) == \
        '"unnamed_kernel_0(float *)","1"'


@pytest.mark.parametrize("name, own", [
    ("softmax_kernel", True),
    ("void softmax_kernel<128>(float *, int)", True),
    ("void ns::softmax_kernel(float *)", True),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char *, 1>>"
     "(int, T2, T3)", True),  # torch.zeros for an accumulator: a constant fill
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)>", True),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align8>(T1::Params)", False),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(T4 *, const T2 *, int)", False),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", False),
])
def test_which_launches_are_the_candidates(name, own):
    assert (profile.foreign_kernels([{"kernel": name}], ["softmax_kernel"]) == []) is own


def test_a_mangled_cuda_kernel_name_is_its_own_launch():
    """A templated CUDA C++ kernel's compiled name is mangled; ncu prints it demangled."""
    launch = [{"kernel": "void gemm_kernel<128, 64>(const __nv_bfloat16 *, float *, int)"}]
    assert profile.foreign_kernels(launch, ["_Z11gemm_kernelILi128ELi64EEvPK13__nv_bfloat16Pfi"]) == []
    assert profile.foreign_kernels([{"kernel": "void ns::inner::attn(float *)"}], ["_ZN2ns5inner4attnEPf"]) == []
    assert profile.unmangled("softmax_kernel") == "softmax_kernel"


# ---- the tool --------------------------------------------------------------------------------------------------------
def test_get_profile_tool(tmp_path):
    from harness.tools import ToolContext

    agent = ToolContext(task=None, store=SimpleNamespace(id="run1"), dumps_root=tmp_path)  # type: ignore[arg-type]
    assert "no profile for iteration 2" in get_profile(agent, {"iteration": 2})
    folder = tmp_path / "run1" / "iter-002"
    folder.mkdir(parents=True)
    (folder / "profile.txt").write_text("softmax_kernel\n  memory-bound (DRAM): DRAM 85% of peak\n")
    (folder / "profile.csv").write_text("\n".join(f'"{i}","x"' for i in range(100)))
    out = get_profile(agent, {"iteration": 2})
    assert out.startswith("softmax_kernel") and "memory-bound" in out
    assert "first 40 of 100 lines" in out and '"39","x"' in out and '"40","x"' not in out


# ---- on a GPU --------------------------------------------------------------------------------------------------------
@pytest.mark.xdist_group("gpu_witness")  # judges a witness (ncu beside the timed median): one such climb at a time
@pytest.mark.gpu
def test_gpu_profile_rung_on_tuned_softmax(softmax_task, tmp_path, gpu_baselines):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if profile.find_ncu() is None:
        pytest.skip("needs Nsight Compute (ncu)")
    ladder = Ladder(task=softmax_task, kernel=TASKS / "demos" / "softmax_4_tuned.py", work_dir=tmp_path / "work",
                    dump_dir=tmp_path / "dumps", profile_cache=tmp_path / "cache", seeds=1,
                    baseline_cache=gpu_baselines, rungs=[*judge_rungs(), rung("dumps"), rung("profile")])
    verdict = ladder.climb()
    r = verdict.rung("profile")
    print(r.message, r.details, sep="\n")
    if r.status == "skip" and "performance counters" in r.message:
        pytest.skip(r.message)
    assert r.status == "ok", r.message
    assert r.metrics["bound"] == "memory-bound" and "memory-bound" in r.message
    assert r.metrics["dram_throughput_pct"] > 60
    assert (tmp_path / "dumps" / "profile.csv").is_file() and os.path.getsize(tmp_path / "dumps" / "profile.csv") > 1000


def test_a_candidate_slower_than_the_runs_best_is_not_profiled(softmax_task, tmp_path, monkeypatch):
    """A search's --profile improving: the climb carries the run's best time; a candidate timed at or over it is left
    unprofiled (no ncu run), said, and its roofline over the ceilings is judged against that witnessed best."""
    monkeypatch.setattr(profile, "find_ncu", lambda: pytest.fail("a slower candidate must not be profiled"))
    ladder = gpu_ladder(softmax_task, tmp_path)
    ladder.profile_under_us = 519.6
    ladder.results.append(RungResult(name="benchmark", status="ok", metrics={"runtime_us": 536.3}))
    r = profile.rung(ladder)
    assert r.status == "skip" and r.metrics == {"slower_than_best_us": 519.6}
    assert r.message.startswith("not profiled: 536.3 us does not beat the run's best so far (519.6 us)")
    faster = gpu_ladder(softmax_task, tmp_path / "faster")
    faster.profile_under_us = 519.6
    faster.results.append(RungResult(name="benchmark", status="ok", metrics={"runtime_us": 519.5}))
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    assert "not installed" in profile.rung(faster).message  # it goes on to ncu
