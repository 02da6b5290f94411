"""Declared config spaces (rungs/worker/autotune.py): compiled on a CPU, the default interpreted, timed and chosen by
the worker's autotune phase, labels kept to what the source holds. CPU only; the H200 run is
benchmarks/gpu_autotune_check.py."""
from __future__ import annotations

import re
import time
import types
from pathlib import Path

import pytest

from rungs.worker import autotune
from rungs.ladder.autotune_report import safe_labels
from rungs.worker.job import Job
from rungs.ladder.ladder import Ladder
from rungs.ladder.rung import rung
from rungs.worker.bench import tune_space

from conftest import KERNELS, TASKS


def climb(task, kernel: Path, tmp_path: Path):
    """The rungs that matter here (the dumps of nine kernels would double the time)."""
    rungs = [rung(name) for name in ("precheck", "compile", "run", "correctness")]
    return Ladder(task=task, kernel=kernel, work_dir=tmp_path / "work", rungs=rungs, seeds=1).climb()


@pytest.mark.parametrize("kernel, kind", [("autotune_configs_softmax.py", "CONFIGS"),
                                          ("autotune_triton_softmax.py", "@triton.autotune")])
def test_every_config_compiles_and_the_default_is_interpreted(lean_softmax_task, tmp_path, kernel, kind):
    # @triton.autotune passes only because the launch gate pins it: with 8 configs Triton's autotuner would time them
    # itself, which in the interpreter fails ("0 active drivers"), and on a GPU would time inside the timed calls.
    v = climb(lean_softmax_task, KERNELS / kernel, tmp_path)
    assert v.verdict == "pass", v.summary
    compiled = v.rung("compile")
    assert f"8 configs compiled ({kind}); timing needs a GPU" in compiled.message
    assert compiled.metrics["autotune"]["configs"] == 8
    labels = compiled.metrics["autotune"]["labels"]
    assert labels[0].startswith("BLOCK=2048 num_warps=4") and labels[-1].startswith("BLOCK=256 num_warps=2")
    assert len(set(labels)) == 8
    # every config built (one test shape here), not only the default the interpreter runs
    assert compiled.message.startswith("8 kernel specialization(s) compiled"), compiled.message


def test_a_config_that_does_not_compile_fails_compile_naming_it(lean_softmax_task, tmp_path):
    v = climb(lean_softmax_task, KERNELS / "autotune_configs_bad_block.py", tmp_path)
    assert (v.verdict, v.failed_rung) == ("fail", "compile")
    msg = v.rung("compile").message
    assert "power of 2" in msg and msg.endswith("(in CONFIGS[1]: BLOCK=300)") and "\n" not in msg, msg


def test_a_config_past_the_hardware_is_dropped_and_said(lean_softmax_task, tmp_path):
    """As triton.autotune prunes a config ptxas or a static_assert refuses: the point is dropped (never timed, never
    chosen), the compile rung says which and why in one line, and the candidate is judged on the rest."""
    v = climb(lean_softmax_task, KERNELS / "autotune_configs_past_hardware.py", tmp_path)
    assert v.verdict == "pass", v.summary
    compiled = v.rung("compile")
    msg = compiled.message
    assert ("2 of 3 configs compiled (CONFIGS); dropped as past the hardware at the largest test shape, never timed "
            "nor chosen: CONFIGS[1] BLOCK=8192: the compiler: CompileTimeAssertionFailure") in msg, msg
    assert "a row block past 4096 columns spills" in msg and "\n" not in msg
    assert compiled.metrics["autotune"]["dropped"] == {"1": compiled.metrics["autotune"]["dropped"]["1"]}


def test_ptxas_out_of_registers_is_a_resource_failure():
    """A 256 x 256 fp32 accumulator on 16 warps needs more than the 128 registers a thread ptxas may give it: the real
    error, from Triton's own compile for sm_90a, is one the compile phase drops a point for."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    from rungs.worker.compile_phase import dropped_reason, out_of_resources

    @triton.jit
    def mm(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
        tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b).to(tl.bfloat16))

    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    src = triton.compiler.ASTSource(fn=mm, signature=sig, constexprs={"BM": 256, "BN": 256, "BK": 64})
    with pytest.raises(Exception) as info:
        triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 16})
    assert out_of_resources(info.value)
    assert "Insufficient registers" in dropped_reason(info.value, True)
    assert not out_of_resources(ValueError("BLOCK must be a power of 2"))


@pytest.mark.parametrize("configs, phrase", [
    ([{"BLOCK": 256}, {"BLOCKK": 512}], "CONFIGS[1] sets BLOCKK, which the entry does not take"),
    ([{"BLOCK": [1, 2]}], "CONFIGS[0]['BLOCK'] is a list"),
    ({"BLOCK": 256}, "CONFIGS must be a non-empty list of dicts"),
    ([{"BLOCK": b} for b in range(65)], "at most 64 are timed"),
])
def test_a_malformed_space_is_refused_in_one_line(configs, phrase):
    module = types.ModuleType("bad")
    module.CONFIGS = configs

    def kernel(x, BLOCK=256):
        return x

    with pytest.raises(autotune.SpaceError, match=re.escape(phrase)):
        autotune.discover(module, kernel)


def _space_module(delays: list[float]) -> tuple[types.ModuleType, object]:
    module = types.ModuleType("tuned")

    class OutOfResources(Exception):  # what Triton raises at a launch past the GPU's shared memory
        pass

    def kernel(x, DELAY=0.0):  # host time stands for the device's here (rungs/timing/devices.HostDevice)
        if DELAY < 0:
            raise OutOfResources("out of resource: shared memory, Required: 262144, Hardware limit: 232448.")
        time.sleep(DELAY)
        return x * 2

    module.CONFIGS = [{"DELAY": d} for d in delays]
    module.kernel = kernel
    return module, kernel


def _tuning_job(**timing: float) -> Job:
    """A CPU job tuning one small softmax bench shape for 4 s (the space's kernels compute in torch)."""
    bench = [{"id": "b00", "shape": {"M": 4, "N": 8}, "dtype": "float32", "seed": 1, "dist": "normal",
              "inputs": f"{TASKS / 'softmax_ref.py'}:make_inputs"}]
    return Job(device="cpu", bench=bench, allow_torch_compute=True, autotune_s=4.0,
               timing={**timing, "calibrate_reps": 1})


def test_the_fastest_timed_config_wins_within_the_budget(tmp_path):
    module, kernel = _space_module([0.02, 0.002, 0.012, 0.008])  # far apart: a loaded CPU stretches sleeps
    space = autotune.discover(module, kernel)
    job = _tuning_job(min_reps=5, max_reps=20, warmup_ms=5.0)
    try:
        result = tune_space(kernel, space, job, tmp_path)
        assert result["winner"] == 1, result
        assert [r["status"] for r in result["configs"]] == ["timed"] * 4
        times = [r["runtime_us"] for r in result["configs"]]
        assert max(times) == times[0] and times[0] > 1e4  # a sample is one call, timed by the host clock
        assert all(r["per_shape"]["b00"]["no_launch"] > 0 for r in result["configs"])  # torch computes: no launch, said

        short = tune_space(kernel, space, Job(**{**job.to_dict(), "autotune_s": 0.01}), tmp_path)
        assert [r["status"] for r in short["configs"]][1:] == ["over budget"] * 3
        assert short["winner"] == 0  # the only one timed: an untimed config cannot win
        assert not list(tmp_path.glob("out-*"))  # nothing saved while autotuning: the winner is judged in bench

        space.dropped[1] = "the compiler: PTXASError: Insufficient registers"  # as the compile phase leaves it
        pruned = tune_space(kernel, space, job, tmp_path)
        assert pruned["configs"][1]["status"] == "dropped" and "runtime_us" not in pruned["configs"][1]
        assert pruned["winner"] == 3, pruned  # the fastest of the points that were built
    finally:
        autotune.discover(types.ModuleType("none"), kernel)


def test_a_config_out_of_shared_memory_at_its_first_launch_is_dropped_not_wrong(tmp_path):
    """Triton checks shared memory when a kernel first loads on the GPU, so a tile past it raises in the autotune phase,
    not at compile: that point is dropped as past the hardware (and the run phase's check of the other points skips
    it), not reported as a config that fails its check."""
    module, kernel = _space_module([0.004, -1.0, 0.002])
    space = autotune.discover(module, kernel)
    job = _tuning_job(min_reps=3, max_reps=5, warmup_ms=1.0)
    try:
        result = tune_space(kernel, space, job, tmp_path)
        assert [r["status"] for r in result["configs"]] == ["timed", "dropped", "timed"], result
        assert "out of resource: shared memory" in result["configs"][1]["error"] and 1 in space.dropped
        assert result["winner"] == 2
    finally:
        autotune.discover(types.ModuleType("none"), kernel)  # this process's space back to none


def test_labels_keep_only_what_the_source_holds(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("BLOCK = 1\ndef softmax_kernel(BLOCK, MODE): pass\nfast = 1\n")
    labels = ["BLOCK=128 num_warps=4", "softmax_kernel: BLOCK=64 MODE=fast", "BLOCK=s3cr3t", "LEAK=1", 7]
    assert safe_labels(labels, src) == ["BLOCK=128 num_warps=4", "softmax_kernel: BLOCK=64 MODE=fast",
                                        "config 2", "config 3", "config 4"]


def test_benchmark_rung_tables_every_config_and_checks_the_others(lean_softmax_task, tmp_path):
    """The phases as a GPU worker leaves them (its autotune, run and bench phases); the benchmark rung is the real one:
    the table marks the chosen config, and the other configs' outputs on the largest test case are judged here."""
    import json

    import torch

    from rungs.ladder import benchmark
    from rungs.ladder.cases import make_cases
    from rungs.sandbox.pool import JobOutcome

    task = lean_softmax_task
    kernel = KERNELS / "autotune_configs_softmax.py"
    ladder = Ladder(task=task, kernel=kernel, work_dir=tmp_path, device="cuda", baseline_cache=tmp_path / "base")
    ladder.job = Job(bench=benchmark.bench_entries(task))
    ladder.cases = make_cases(task, task.shapes.test, 1, with_reference=True, base_seed=3)
    case = ladder.cases[0]
    ladder.job_dir.mkdir(parents=True)
    torch.save([r.to(torch.float32) for r in case.reference], ladder.job_dir / f"out-{case.id}-cfg1.pt")
    wrong = [torch.zeros_like(r, dtype=torch.float32) for r in case.reference]
    torch.save(wrong, ladder.job_dir / f"out-{case.id}-cfg2.pt")
    bench_id = ladder.job.bench[0]["id"]
    rows = [{"config": k, "label": label, "status": "timed", "runtime_us": us,
             "per_shape": {bench_id: {"runtime_us": us, "no_launch": 0}}}
            for k, (label, us) in enumerate([("BLOCK=2048 num_warps=4", 900.0), ("BLOCK=1024 num_warps=4", 1000.0),
                                             ("BLOCK=512 num_warps=4", 950.0)])]
    rows.append({"config": 3, "label": "BLOCK=256 num_warps=4", "status": "over budget", "per_shape": {}})
    bench_case = {"id": bench_id, "shape": ladder.job.bench[0]["shape"], "dtype": "float32", "gpu": "NVIDIA H200",
                  "runtime_us": 900.0, "iqr_us": 2.0, "reps": 40, "rel_se": 0.001, "stop": "stable", "mode": "single",
                  "calls_per_replay": 1, "input_sets": 3, "note": ""}
    ladder.outcome = JobOutcome(phases={
        "autotune": {"ok": True, "configs": rows, "winner": 0, "kind": "CONFIGS", "seconds": 4.2, "budget_s": 60.0},
        "run": {"ok": True, "cases": [], "other_configs": {"case": case.id, "errors": {},
                                                           "files": {"1": f"out-{case.id}-cfg1.pt",
                                                                     "2": f"out-{case.id}-cfg2.pt"}}},
        "bench": {"ok": True, "cases": [bench_case]}})
    entries = ladder.job.bench
    ladder.baseline_cache.mkdir()
    benchmark.baseline_path(ladder.baseline_cache, task, entries).write_text(
        json.dumps({"cases": []}))
    r = benchmark.rung(ladder)
    assert r.status == "ok", r.message
    tuned = r.metrics["autotune"]
    assert tuned["winner"] == 0 and tuned["label"] == "BLOCK=2048 num_warps=4"
    assert "autotuned 3/4 configs" in r.message and "chose #0 (BLOCK=2048 num_warps=4)" in r.message
    assert "configs #2 fail their check" in r.message
    lines = tuned["table"].splitlines()
    assert lines[1].startswith("*") and "chosen: judged on every case" in lines[1]
    assert "ok (" in lines[2] and "WRONG" in lines[3] and "over budget" in lines[4]
    assert tuned["table"] in r.details


def test_two_autotuned_kernels_make_a_product_space_and_each_is_pinned():
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)

    module = types.ModuleType("two")
    module.first = triton.autotune([triton.Config({"BLOCK": b}) for b in (64, 128)], key=["n"])(copy_kernel)
    module.second = triton.autotune([triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((32, 1), (64, 2), (128, 4))],
                                    key=["n"])(copy_kernel)
    try:
        space = autotune.discover(module, lambda x: x)
        assert (space.kind, len(space)) == ("triton.autotune", 6)
        assert space.labels[5].startswith("copy_kernel: BLOCK=128") and "; copy_kernel: BLOCK=128 num_warps=4" in \
            space.labels[5]
        with autotune.chosen(4):  # first: BLOCK=128, second: BLOCK=64 num_warps=2
            with autotune.pinned(module.first), autotune.pinned(module.second):
                assert [c.kwargs["BLOCK"] for c in module.first.configs + module.second.configs] == [128, 64]
        assert len(module.first.configs) == 2 and len(module.second.configs) == 3  # put back after the call
    finally:
        autotune.discover(types.ModuleType("none"), lambda x: x)


@pytest.mark.gpu
def test_gpu_every_reported_config_is_checked(lean_softmax_task, tmp_path):
    """On a GPU the worker runs every non-chosen point on the largest test case and the benchmark rung judges each:
    all of autotune_configs_softmax.py's points are right, so every row says 'ok' (2026-12-02 on the H200 every
    row said 'raised: TypeError': the run phase handed a case's record, not the entry, to the other points)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    rungs = [rung(name) for name in ("precheck", "compile", "run", "correctness", "benchmark")]
    verdict = Ladder(task=lean_softmax_task, kernel=KERNELS / "autotune_configs_softmax.py", work_dir=tmp_path / "w",
                     rungs=rungs, seeds=1, baseline_cache=tmp_path / "base").climb()
    r = verdict.rung("benchmark")
    assert r.status == "ok", r.message
    rows = r.metrics["autotune"]["table"].splitlines()[1:]
    checks = [row for row in rows if "chosen" not in row and "over budget" not in row]
    assert checks and all("ok (" in row for row in checks), r.metrics["autotune"]["table"]
