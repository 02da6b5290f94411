"""The benchmark and roofline rungs: their pure parts on a CPU, the real thing on a GPU (marked `gpu`)."""
from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from rungs.core.spec import load_task
from rungs.ladder import baseline, benchmark, roofline
from rungs.timing.devices import CudaDevice, HostDevice
from rungs.timing.inputs import _key, _prefetch, load_function, make_bench_inputs, prefetch_inputs
from rungs.timing.measure import (TimingConfig, clone_input, collect, input_sets, measure, quantile,
                                  rel_se_of_median, summarize)
from rungs.worker.bench import bench_entry
from rungs.ladder.ladder import Ladder
from rungs.core.result import RungResult
from rungs.worker.job import Job
from rungs.ladder.rung import rung
from rungs.sandbox.pool import JobOutcome
from conftest import judge_rungs

TASKS = Path(__file__).resolve().parent.parent / "tasks"
SOFTMAX = TASKS / "softmax.yaml"
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def task():
    return load_task(SOFTMAX)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_HARNESS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ---- statistics -------------------------------------------------------------------------------------------
def test_quantiles_match_numpy_linear():
    import numpy as np

    xs = sorted(random.Random(1).uniform(0, 10) for _ in range(37))
    for q in (0.0, 0.25, 0.5, 0.75, 1.0):
        assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))


def test_summarize_median_and_iqr():
    s = summarize([5, 1, 3, 2, 4])
    assert s["runtime_us"] == 3 and s["q25_us"] == 2 and s["q75_us"] == 4 and s["iqr_us"] == 2 and s["reps"] == 5


def test_rel_se_of_median():
    assert rel_se_of_median([1.0, 2.0, 3.0]) == math.inf  # too few to say
    assert rel_se_of_median([10.0] * 50) == 0.0
    rng = random.Random(0)
    xs = [100 + rng.gauss(0, 1) for _ in range(400)]
    # sigma 1 around 100 over 400 samples: 1.2533 * 1 / 20 / 100
    assert rel_se_of_median(xs) == pytest.approx(1.2533 / 20 / 100, rel=0.2)


class FakeClock:
    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_collect_stops_when_stable():
    rng = random.Random(0)
    cfg = TimingConfig(min_reps=20, rel_se=0.005, cap_s=1e9)
    samples, why = collect(lambda: 100 + rng.gauss(0, 0.5), cfg, FakeClock(0.001))
    assert why == "stable" and len(samples) == 20  # 0.5% noise: stable as soon as allowed


def test_collect_noisy_hits_time_cap():
    rng = random.Random(0)
    cfg = TimingConfig(min_reps=20, rel_se=0.001, cap_s=1.0, max_reps=10_000)
    samples, why = collect(lambda: 100 * rng.lognormvariate(0, 0.5), cfg, FakeClock(0.01))
    assert why == "time_cap" and 50 <= len(samples) <= 120


def test_collect_max_reps_and_slow_kernel_floor():
    rng = random.Random(0)
    cfg = TimingConfig(min_reps=20, rel_se=1e-9, cap_s=1e9, max_reps=64)
    assert collect(lambda: rng.random(), cfg, FakeClock(0.0))[1] == "max_reps"
    # a kernel slower than the cap still gets three samples
    cfg = TimingConfig(min_reps=20, cap_s=0.5)
    samples, why = collect(lambda: 1.0, cfg, FakeClock(10.0))
    assert why == "time_cap" and len(samples) == 3


def test_timing_config_from_dict_ignores_unknown():
    cfg = TimingConfig.from_dict({"cap_s": 0.1, "bogus": 1})
    assert cfg.cap_s == 0.1 and cfg.as_dict()["min_reps"] == TimingConfig().min_reps


# ---- inputs and the timing loop on the host clock ------------------------------------------------------------
def test_clone_input_keeps_views():
    base = torch.randn(10, 20)
    view = base[2:, 3:15].t()
    c = clone_input(view)
    assert c.stride() == view.stride() and c.storage_offset() == view.storage_offset()
    assert torch.equal(c, view) and c.data_ptr() != view.data_ptr()
    d = clone_input(base)
    assert torch.equal(d, base) and d.data_ptr() != base.data_ptr()
    assert clone_input(3) == 3


def _entry(shape: dict[str, Any]) -> dict[str, Any]:
    return {"id": "b00", "shape": shape, "dtype": "float32", "seed": 1, "dist": "normal",
            "inputs": f"{TASKS / 'softmax_ref.py'}:make_inputs"}


@pytest.mark.parametrize("graph_under_us", [0.0, 1e9])
def test_bench_entry_on_host(tmp_path, graph_under_us):
    # torch computes here (the timing is under test, not the trace the checked calls run under)
    job = Job(device="cpu", bench=[_entry({"M": 64, "N": 256})], allow_torch_compute=True,
              timing={"cap_s": 0.2, "min_reps": 5, "graph_under_us": graph_under_us})
    seen = []

    def fn(x):
        seen.append(x.data_ptr())
        return torch.softmax(x, -1)

    [r] = bench_entry(fn, job, tmp_path)
    assert r["id"] == "b00" and r["runtime_us"] > 0 and r["iqr_us"] >= 0 and r["reps"] >= 3
    assert r["mode"] == ("graph" if graph_under_us else "single")
    assert r["input_sets"] >= 2 and len(set(seen)) >= r["input_sets"]  # rotated among distinct addresses
    if r["mode"] == "graph":
        assert r["calls_per_replay"] >= 2
    assert r["stop"] in ("stable", "time_cap", "max_reps") and len(r["samples_us"]) == r["reps"]


def test_prefetched_inputs_are_used(tmp_path):
    job = Job(device="cpu", bench=[_entry({"M": 16, "N": 32})], timing={"cap_s": 0.05, "min_reps": 3},
              allow_torch_compute=True)
    prefetch_inputs(job.bench)
    [r] = bench_entry(lambda x: torch.softmax(x, -1), job, tmp_path)
    # this job's inputs were taken (another test in this process may have left its own: a worker runs one job)
    assert r["inputs_background_s"] > 0 and _key(job.bench[0]) not in _prefetch["made"]
    # the same inputs as made synchronously
    made, _ = make_bench_inputs(job.bench[0], "cpu")
    make_inputs = load_function(f"{TASKS / 'softmax_ref.py'}:make_inputs")
    assert torch.equal(made[0], make_inputs({"M": 16, "N": 32}, torch.float32, 1, "normal")[0])


def test_worker_bench_phase_in_a_real_worker(task, tmp_path):
    """The worker's bench phase end to end on a CPU: the Triton interpreter stands in for the GPU."""
    from rungs.ladder.cases import make_cases, write_inputs
    from rungs.sandbox.pool import run_worker

    cases = make_cases(task, [{"M": 4, "N": 7}], 1, with_reference=False)
    job = Job(kernel=str(TASKS / "demos" / "softmax_3_rowwise.py"), entry="kernel", dsl="triton",
              device="cpu", cases=write_inputs(cases, tmp_path), phases=["run", "bench"],
              bench=[_entry({"M": 8, "N": 64})], timing={"cap_s": 0.2, "min_reps": 3, "warmup_ms": 1}, prefetch=True)
    outcome = run_worker(tmp_path, job, 120, interpret=True)
    bench = outcome.phases["bench"]
    assert bench["ok"], bench.get("error") or outcome.log_tail
    [case] = bench["cases"]
    assert case["runtime_us"] > 0 and case["inputs_background_s"] > 0
    assert bench["wall_s"] > 0 and bench["started"] > outcome.phases["run"]["started"]


def test_input_sets_respect_memory_budget():
    x = torch.zeros(1024)  # 4 KiB
    cfg = TimingConfig(sets_max_bytes=3 * 4096)
    sets = input_sets([x], 10, HostDevice(), cfg)
    assert len(sets) == 3 and all(s[0] is not x for s in sets)  # copies only: fresh values are written into them
    cfg = TimingConfig(sets_max_bytes=0)
    assert len(input_sets([x], 10, HostDevice(), cfg)) == 1


def test_bench_entries_from_task(task):
    entries = benchmark.bench_entries(task)
    assert [e["shape"] for e in entries] == task.shapes.bench
    e = entries[0]
    path, _, func = e["inputs"].rpartition(":")
    assert Path(path).is_absolute() and Path(path).is_file() and func == "make_inputs"
    assert e["dtype"] == "float32" and e["dist"] == "normal" and isinstance(e["seed"], int)
    json.dumps(entries)  # goes into job.json


# ---- baselines -------------------------------------------------------------------------------------------
def test_baseline_process_on_host(task, tmp_path):
    entries = [_entry({"M": 32, "N": 128})]
    data, note, seconds = benchmark.ensure_baselines(task, entries, tmp_path, {"cap_s": 0.2, "min_reps": 5},
                                                     device="cpu", compile=False)
    assert note == "" and seconds > 0
    [case] = data["cases"]
    assert case["eager"]["runtime_us"] > 0 and "error" in case["compile"]
    # a second call reads the cache instead of starting a process
    again, _, seconds2 = benchmark.ensure_baselines(task, entries, tmp_path, device="cpu", compile=False)
    assert again == data and seconds2 == 0.0


def test_baselines_asked_for_at_once_are_timed_once(task, tmp_path):
    """Parallel candidates of one task ask for the same baselines at once: the second waits for the first's file
    (here: a process that holds the lock and writes the figures) instead of timing the reference beside it."""
    import fcntl
    import threading

    entries = [_entry({"M": 32, "N": 128})]
    path = benchmark.baseline_path(tmp_path, task, entries, compile=False)
    job_dir = tmp_path / f"baseline-job-{path.stem.removeprefix('baselines-')}"
    job_dir.mkdir()
    got = {}
    with open(job_dir / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        asker = threading.Thread(target=lambda: got.update(r=benchmark.ensure_baselines(
            task, entries, tmp_path, device="cpu", compile=False)))
        asker.start()
        asker.join(1.0)
        assert asker.is_alive()  # waiting on the first one's lock, not timing
        path.write_text(json.dumps({"error": "", "cases": [{"id": "first"}]}))
    asker.join(30)
    data, note, seconds = got["r"]
    assert data["cases"] == [{"id": "first"}] and not (job_dir / "job.json").exists()
    assert seconds >= 1.0  # the wait is the baselines' time (the benchmark rung's breakdown shows it there)


def test_baseline_process_failure_is_cached(task, tmp_path):
    entries = [dict(_entry({"M": 8, "N": 16}), inputs=f"{TASKS / 'softmax_ref.py'}:no_such_function")]
    data, note, _ = benchmark.ensure_baselines(task, entries, tmp_path, device="cpu", compile=False)
    assert "baselines failed" in note and data["cases"] == []
    again, note2, seconds = benchmark.ensure_baselines(task, entries, tmp_path, device="cpu", compile=False)
    assert note2 == note and seconds == 0.0


def test_baseline_compile_failure_is_reported(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("inductor exploded\nmore")

    monkeypatch.setattr(torch, "compile", broken)
    out = baseline.run({"device": "cpu", "reference": f"{TASKS / 'softmax_ref.py'}:reference",
                        "bench": [_entry({"M": 8, "N": 16})], "timing": {"cap_s": 0.05, "min_reps": 3}})
    [case] = out["cases"]
    assert case["eager"]["runtime_us"] > 0
    assert case["compile"]["error"] == "RuntimeError: inductor exploded"


def test_the_baseline_process_holds_the_gpu_lock_only_while_it_times(tmp_path):
    """Its start, imports and first calls (torch.compile's inductor build) run while another process times on the
    GPU; only the timings wait for the lock, and the wait is reported."""
    import threading
    import time

    from rungs.timing import gpu_lock

    ref = tmp_path / "slow_first_ref.py"
    ref.write_text("import time\nfrom pathlib import Path\nMARK = Path(__file__).with_name('first_call')\n"
                   "def reference(x):\n    if not MARK.exists():\n        MARK.write_text(repr(time.time()))\n"
                   "    return x * 2\n")
    key = f"test-baseline-{tmp_path.name}"
    taken, release = threading.Event(), threading.Event()

    def other_process():
        with gpu_lock.held_for(key):
            taken.set()
            release.wait(30)
    holder = threading.Thread(target=other_process)
    holder.start()
    taken.wait(10)
    got = {}
    timer = threading.Thread(target=lambda: got.update(out=baseline.run(
        {"device": "cpu", "reference": f"{ref}:reference", "bench": [_entry({"M": 8, "N": 16})], "compile": False,
         "timing": {"cap_s": 0.05, "min_reps": 3}, "gpu_lock": key})))
    timer.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "first_call").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    first_call_while_held = (tmp_path / "first_call").exists()
    time.sleep(0.5)
    still_waiting = timer.is_alive()
    release.set()
    holder.join()
    timer.join(30)
    assert first_call_while_held and still_waiting  # the first call ran beside the other's work; the timing waited
    [case] = got["out"]["cases"]
    assert case["eager"]["runtime_us"] > 0 and got["out"]["gpu_wait_s"] >= 0.5


# ---- ceilings and the roofline ---------------------------------------------------------------------------
def test_floor_and_fraction():
    # softmax 32768x8192 fp32: 2 GiB moved at 4000 GB/s is the floor; 5 FLOP/element is nothing at 60 TFLOP/s
    flops, nbytes = 5 * 32768 * 8192, 8 * 32768 * 8192
    floor_s, bound = roofline.floor_seconds(flops, nbytes, 60.0, 4000.0)
    assert bound == "memory" and floor_s == pytest.approx(nbytes / 4e12)
    assert roofline.fraction(floor_s, floor_s * 2e6) == pytest.approx(0.5)
    # a 4096^3 GEMM is compute-bound
    floor_s, bound = roofline.floor_seconds(2 * 4096**3, 3 * 2 * 4096**2, 800.0, 4000.0)
    assert bound == "compute" and floor_s == pytest.approx(2 * 4096**3 / 800e12)


def test_compute_rate_by_unit_and_dtype():
    c = roofline.datasheet("NVIDIA H200")
    assert roofline.compute_rate(c, "matmul", "bfloat16") == (989.4, "bfloat16")
    assert roofline.compute_rate(c, "matmul", "tf32")[0] == 494.7
    assert roofline.compute_rate(c, "fp32", "float32") == (66.9, "fp32_fma")


def test_datasheet_fallback_is_labelled(cache):
    c = roofline.load_ceilings("NVIDIA H200")
    assert c["bandwidth_gbps"] == 4800.0 and c["tflops"]["bfloat16"] == 989.4
    assert all("datasheet" in v and "not measured" in v for v in c["source"].values())
    assert roofline.datasheet("NVIDIA H100 PCIe")["bandwidth_gbps"] == 2000.0
    assert roofline.datasheet("NVIDIA H100 80GB HBM3")["bandwidth_gbps"] == 3350.0
    assert "unknown GPU" in roofline.datasheet("Some Future GPU")["source"]["bandwidth_gbps"]


def test_ceilings_cache_roundtrip(cache):
    path = roofline.ceilings_path("NVIDIA H200")
    assert path.parent == cache and path.name == "ceilings-NVIDIA-H200.json"
    roofline.save_ceilings(path, {"gpu": "NVIDIA H200", "bandwidth_gbps": 4250.0, "tflops": {"bfloat16": 790.0},
                                  "source": {"bandwidth_gbps": "measured: copy", "bfloat16": "measured: matmul"}})
    c = roofline.load_ceilings("NVIDIA H200")
    assert c["bandwidth_gbps"] == 4250.0 and c["source"]["bandwidth_gbps"] == "measured: copy"
    assert c["tflops"]["bfloat16"] == 790.0 and c["source"]["bfloat16"] == "measured: matmul"
    assert c["tflops"]["fp32_fma"] == 66.9 and "datasheet" in c["source"]["fp32_fma"]  # filled in, labelled


def _bench_result(runtime_us: float, gpu: str = "NVIDIA H200") -> RungResult:
    return RungResult(name="benchmark", status="ok", metrics={
        "gpu": gpu, "per_shape": [{"shape": {"M": 32768, "N": 8192}, "dtype": "float32", "runtime_us": runtime_us}]})


def _measured(cache: Path) -> None:
    roofline.save_ceilings(roofline.ceilings_path("NVIDIA H200"), {
        "gpu": "NVIDIA H200", "bandwidth_gbps": 4250.0, "tflops": {"float32": 50.0},
        "source": {"bandwidth_gbps": "measured: copy"}})


def test_roofline_rung_target(task, cache):
    _measured(cache)
    floor_us = 8 * 32768 * 8192 / 4250e9 * 1e6  # ~505 us
    ok = roofline.rung(task, _bench_result(floor_us / 0.95))
    assert ok.status == "ok" and ok.metrics["target_reached"] is True
    assert ok.metrics["roofline_fraction"] == pytest.approx(0.95, abs=1e-3) and ok.metrics["bound"] == "memory"
    short = roofline.rung(task, _bench_result(floor_us / 0.5))
    assert short.status == "ok" and short.metrics["target_reached"] is False and "not reached" in short.message


def test_roofline_rung_flags_impossible(task, cache):
    _measured(cache)
    peak_floor_us = 8 * 32768 * 8192 / 4800e9 * 1e6  # the datasheet's 4.8 TB/s
    bad = roofline.rung(task, _bench_result(peak_floor_us / 1.5))
    assert bad.status == "fail" and "impossible" in bad.message and bad.metrics["target_reached"] is False
    # within the datasheet's peak but 113% of the measured copy bandwidth: impossible for a memory-bound shape
    # (tests/test_bench_checks.py: test_memory_bound_past_the_device_copy_is_impossible_even_witnessed)
    fast = roofline.rung(task, _bench_result(peak_floor_us / 1.0))
    assert fast.status == "fail" and "faster than a device copy of the same bytes: impossible" in fast.message
    # over the copy within its noise margin: passes only with the outside witness
    # (tests/test_bench_checks.py: test_over_the_roofline_passes_only_when_witnessed)
    floor_us = 8 * 32768 * 8192 / 4250e9 * 1e6
    near = roofline.rung(task, _bench_result(floor_us / 1.03))
    assert near.status == "fail" and near.metrics["roofline_fraction"] > 1 and "unwitnessed" in near.message


# ---- the ladder's job and the benchmark rung on a synthetic worker outcome ------------------------------------
def _fake_case(entry: dict[str, Any], runtime_us: float) -> dict[str, Any]:
    return {"id": entry["id"], "shape": entry["shape"], "dtype": entry["dtype"], "gpu": "NVIDIA H200",
            "inputs_s": 0.3, "runtime_us": runtime_us, "iqr_us": 2.0, "reps": 40, "rel_se": 0.001, "stop": "stable",
            "mode": "single", "calls_per_replay": 1, "input_sets": 3, "note": "", "first_call_s": 0.5,
            "warmup_s": 0.05, "timed_s": 0.1}


def _fake_gpu_ladder(task, tmp_path, forge=lambda cases: cases) -> tuple[Ladder, dict]:
    """A ladder whose pool's worker leaves the phases a GPU worker would (the bench cases passed through `forge`, as a
    tampering worker could write them), with the trusted baselines cached; compile climbed. The rungs are the real
    ones."""
    captured = {}

    class FakePool:  # the worker's phases as a GPU worker would leave them; the rungs are the real ones
        index = None  # pinned to no GPU: the harness's own view, as a default pool

        def pinned_env(self):
            return {}

        def prestart(self, dsl, interpret, readable=(), zygote=False):
            pass

        def warm_next(self, dsl, readable=(), zygote=False):
            pass

        def session(self, dsl):
            return None

        def run(self, job_dir, job, timeout_s, interpret, session=None):
            return fake_worker(job_dir, job, timeout_s, interpret)

    def fake_worker(job_dir, job, timeout_s, interpret):
        captured["job"] = json.loads(job.to_json())
        t = __import__("time").monotonic()
        phases = {"compile": {"ok": True, "import_s": 0.1, "compile_s": 0.4, "launches": 1, "kernels": [],
                              "started": t, "wall_s": 1.2},
                  "run": {"ok": True, "cases": [], "started": t + 1.2, "wall_s": 0.2},
                  "bench": {"ok": True, "cases": forge([_fake_case(e, 1000.0) for e in job.bench]),
                            "started": t + 1.4, "wall_s": 1.0}}
        return JobOutcome(phases=phases, returncode=0, seconds=2.6)

    ladder = Ladder(task=task, kernel=TASKS / "demos" / "softmax_3_rowwise.py", work_dir=tmp_path / "w",
                    device="cuda", seeds=1, baseline_cache=tmp_path / "baselines", pool=FakePool())
    assert rung("compile")(ladder).status == "ok"
    entries = captured["job"]["bench"]
    # baselines as the trusted process would have cached them
    ladder.baseline_cache.mkdir(parents=True)
    cached = {"gpu": "NVIDIA H200", "cases": [{"id": e["id"], "eager": {"runtime_us": 1500.0},
                                               "compile": {"error": "RuntimeError: no"}} for e in entries]}
    benchmark.baseline_path(ladder.baseline_cache, task, entries).write_text(
        json.dumps(cached))
    ladder.results.append(RungResult(name="compile", status="ok", seconds=3.0))
    return ladder, captured["job"]


def test_ladder_cuda_job_and_benchmark_rung(task, tmp_path, cache, monkeypatch):
    ladder, job = _fake_gpu_ladder(task, tmp_path)
    assert job["phases"] == ["compile", "autotune", "run", "bench"]
    assert job["bench"] == benchmark.bench_entries(task)

    bench = rung("benchmark")(ladder)
    assert bench.status == "ok", bench.message
    m = bench.metrics
    assert m["runtime_us"] == 1000.0 and m["iqr_us"] == 2.0
    assert m["gbps"] == pytest.approx(8 * 32768 * 8192 / 1e-3 / 1e9, abs=0.1)
    assert m["tflops"] == pytest.approx(5 * 32768 * 8192 / 1e-3 / 1e12, abs=1e-3)
    assert m["speedup_vs_eager"] == 1.5 and m["speedup_vs_compile"] is None
    assert "torch.compile failed" in bench.message
    assert {"worker_start", "import", "compile", "run", "bench_inputs", "bench_timed", "judge"} <= set(m["breakdown_s"])
    assert m["overhead_s"] > 0
    ladder.results.append(bench)
    roof = rung("roofline")(ladder)
    assert roof.status == "ok" and 0 < roof.metrics["roofline_fraction"] < 1


def test_the_bench_cases_shapes_are_the_jobs_not_the_workers_report(task, tmp_path, cache):
    """The worker's phase file repeats each case's shape and dtype: a tampering worker that claimed a larger shape
    made its bytes, GB/s and roofline fraction larger (and, where a trusted baseline then beat the device copy on
    those bytes, lifted the roofline's impossible line). The shape and dtype are now the job's own entry's; a case
    left out, repeated, reordered or added fails the rung."""
    def inflate(cases):
        for c in cases:
            c["shape"] = {**c["shape"], "M": c["shape"]["M"] * 5 // 4}
            c["dtype"] = "float16"
        return cases

    ladder, job = _fake_gpu_ladder(task, tmp_path / "inflated", inflate)
    bench = rung("benchmark")(ladder)
    assert bench.status == "ok", bench.message
    assert [(r["shape"], r["dtype"]) for r in bench.metrics["per_shape"]] == \
        [(e["shape"], e["dtype"]) for e in job["bench"]]
    assert bench.metrics["gbps"] == pytest.approx(8 * 32768 * 8192 / 1e-3 / 1e9, abs=0.1)  # the true shape's bytes
    for name, forge in (("left out", lambda cs: cs[1:]), ("repeated", lambda cs: cs + cs[:1]),
                        ("reordered", lambda cs: cs[::-1]), ("renamed", lambda cs: [{**c, "id": "b99"} for c in cs])):
        ladder, job = _fake_gpu_ladder(task, tmp_path / name.replace(" ", "_"), forge)
        if name == "reordered" and len(job["bench"]) < 2:
            continue
        r = rung("benchmark")(ladder)
        assert r.status == "fail" and "are not the job's bench shapes" in r.message, (name, r.message)


def test_benchmark_rung_reports_bench_failure(task, tmp_path):
    ladder = Ladder(task=task, kernel=TASKS / "demos" / "softmax_3_rowwise.py", work_dir=tmp_path, device="cuda")
    ladder.job = Job(bench=benchmark.bench_entries(task))
    ladder.outcome = JobOutcome(phases={"bench": {"ok": False, "error": "  x.py:3 in k: y = f(x)\nRuntimeError: illegal address\nmore advice"}})
    r = benchmark.rung(ladder)
    assert r.status == "fail" and "illegal address" in r.message
    ladder.outcome = JobOutcome(phases={}, timed_out=True, seconds=120)
    r = benchmark.rung(ladder)
    assert r.status == "fail" and "timed out" in r.message


def test_cpu_ladder_skips_gpu_rungs(lean_softmax_task, tmp_path):
    # the lean copy (one small shape): which rungs a CPU climb skips does not depend on the task's sizes
    verdict = Ladder(task=lean_softmax_task, kernel=TASKS / "demos" / "softmax_3_rowwise.py", work_dir=tmp_path,
                     device="cpu", seeds=1).climb()
    for name in ("benchmark", "profile"):
        assert verdict.rung(name).status == "skip" and verdict.rung(name).message == "no CUDA device"
    assert verdict.rung("roofline").status == "skip"
    assert verdict.rung("correctness").status == "ok"


# ---- on a GPU ----------------------------------------------------------------------------------------------------
@pytest.mark.xdist_group("gpu_timing")  # compares timings: one such test at a time
@pytest.mark.gpu
@needs_cuda
def test_gpu_benchmark_rung_softmax(task, tmp_path, gpu_baselines):
    # up to the benchmark, then the roofline (the witness and ncu profile: test_profile's GPU test)
    verdict = Ladder(task=task, kernel=TASKS / "demos" / "softmax_3_rowwise.py", work_dir=tmp_path / "w",
                     seeds=1, baseline_cache=gpu_baselines, rungs=[*judge_rungs(), rung("roofline")]).climb()
    bench, roof = verdict.rung("benchmark"), verdict.rung("roofline")
    assert verdict.verdict == "pass", verdict.summary
    m = bench.metrics
    print("breakdown_s", m["breakdown_s"], "baseline_s", m["baseline_s"], "rungs",
          {r.name: r.seconds for r in verdict.rungs})  # shown by -rfE where an assertion below fails
    assert bench.status == "ok" and m["runtime_us"] > 0 and 0 <= m["iqr_us"] < m["runtime_us"]
    assert 100 < m["gbps"] < 6000, m["gbps"]
    assert m["speedup_vs_eager"] and m["speedup_vs_eager"] > 0
    assert m["per_shape"][0]["mode"] == "single"  # ~1 ms: no graph needed
    # the 2 s target: overhead_probe.py; bench_reference_start, ... split bench_reference and are not added again
    phases = {k: v for k, v in m["breakdown_s"].items() if k != "total" and not k.startswith("bench_reference_")}
    assert {"worker_start", "compile", "run", "bench_timed", "judge"} <= set(phases)
    assert abs(sum(phases.values()) - m["breakdown_s"]["total"]) < 0.1 * m["breakdown_s"]["total"] + 0.05
    assert roof.status == "ok" and 0 < roof.metrics["roofline_fraction"] <= 1.05
    assert isinstance(verdict.metric("target_reached"), bool)
    assert Path(roofline.ceilings_path(m["gpu"])).is_file()  # measured by the baseline process


@pytest.mark.xdist_group("gpu_timing")  # compares timings: one such test at a time
@pytest.mark.gpu
@needs_cuda
def test_gpu_a_climb_times_only_once_another_process_is_done(lean_softmax_task, tmp_path, gpu_baselines):
    """Another harness process holds the GPU's timing lock for 8 s from the climb's start: the worker compiles and
    runs meanwhile, waits before its bench phase, and the wait shows in the breakdown (not in the timing)."""
    import threading

    from rungs.sandbox import gpus
    from rungs.timing import gpu_lock

    taken, done = threading.Event(), threading.Event()

    def other_process():
        with gpu_lock.held_for(gpus.identity({})):
            taken.set()
            done.wait(8)
    holder = threading.Thread(target=other_process)
    holder.start()
    taken.wait(30)
    try:
        verdict = Ladder(task=lean_softmax_task, kernel=TASKS / "demos" / "softmax_4_tuned.py",
                         work_dir=tmp_path / "w", seeds=1, baseline_cache=gpu_baselines, rungs=judge_rungs()).climb()
    finally:
        done.set()
        holder.join()
    assert verdict.verdict == "pass", verdict.summary
    parts = verdict.rung("benchmark").metrics["breakdown_s"]
    print(parts)
    assert parts.get("gpu_wait", 0) > 0.5


class _BusyingHost(HostDevice):
    """The host clock, with every sync after the calibration taking `lag_s` longer (a CPU busy with other work,
    as under `--candidates 4` or the GPU tests run four at a time) and any work a call left `pending` (as on a
    side stream that never joins) waited for by the next sync. Spins rather than sleeps: sleep's jitter is larger
    than what is judged."""

    def __init__(self, lag_s: float) -> None:
        self.lag_s, self.syncs, self.pending, self.later = lag_s, 0, 0.0, 0.0

    def sync(self) -> None:
        self.syncs += 1
        end = time.perf_counter() + self.pending + (self.lag_s if self.syncs > 12 else 0.0)
        self.pending, self.later = self.later, 0.0  # `later`: work launched (from a thread) after the first sync
        while time.perf_counter() < end:
            pass


def test_a_busy_host_is_not_taken_for_work_on_another_stream():
    """The wait for the idle device is measured again after every timed call: a host that got slower after the
    calibration (80 us per sync here) does not make an honest call "work ran past the end event", while work
    left past the end event (2 ms) still counts, past the most a call's wait may lose to a slow host
    (idle_drift_max_us). Before, the honest call was timed to device idle at ~80 us."""
    cfg = TimingConfig(graph_under_us=0.0, cap_s=0.3, warmup_ms=5, side_stream_min_us=30.0, calibrate_reps=10,
                       idle_drift_max_us=200.0)  # above the lag here: the spins' jitter is not judged
    x = torch.zeros(4)
    dev = _BusyingHost(lag_s=80e-6)
    honest = measure(lambda t: t + 1, [x], dev, cfg)
    assert not honest["side_stream"], honest["note"]
    assert honest["runtime_us"] < 60, honest

    sneaky_dev = _BusyingHost(lag_s=80e-6)

    def unjoined(t):
        sneaky_dev.pending = 2e-3
        return t + 1

    sneaky = measure(unjoined, [x], sneaky_dev, cfg)
    assert sneaky["side_stream"] and sneaky["runtime_us"] > 1500, sneaky

    def unjoined_and_a_slow_second_wait(t):  # and lengthens the wait measured after the call by as much
        sneaky_dev.pending = sneaky_dev.later = 2e-3
        return t + 1

    hiding = measure(unjoined_and_a_slow_second_wait, [x], sneaky_dev, cfg)
    assert hiding["side_stream"] and hiding["runtime_us"] > 1500, hiding


def _cuda_device(**overrides):
    return CudaDevice(TimingConfig(**overrides)), TimingConfig(**overrides)


@pytest.mark.xdist_group("gpu_timing")  # compares timings: one such test at a time
@pytest.mark.gpu
@needs_cuda
def test_gpu_short_kernel_uses_graph_and_repeats(gpu_alone):
    dev, cfg = _cuda_device()
    x = torch.randn(256, 1024, device="cuda")
    a = measure(lambda t: torch.softmax(t, -1), [x], dev, cfg)
    b = measure(lambda t: torch.softmax(t, -1), [x], dev, cfg)
    assert a["mode"] == "graph" and a["calls_per_replay"] >= 2 and a["input_sets"] >= 2
    assert a["runtime_us"] < 20
    assert abs(a["runtime_us"] - b["runtime_us"]) / a["runtime_us"] < 0.15


@pytest.mark.xdist_group("gpu_timing")  # compares timings: one such test at a time
@pytest.mark.gpu
@needs_cuda
def test_gpu_side_stream_work_counts(gpu_alone):
    dev, cfg = _cuda_device(graph_under_us=0.0)
    x = torch.randn(8192, 8192, device="cuda")
    side = torch.cuda.Stream()

    def joined(t):
        return torch.softmax(t, -1)

    def unjoined(t):  # the real work on a side stream that never joins back: stream events alone miss it
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(4):
                y = torch.softmax(t, -1)
        return y

    honest = measure(joined, [x], dev, cfg)
    sneaky = measure(unjoined, [x], dev, cfg)
    assert not honest["side_stream"]
    assert sneaky["side_stream"] and sneaky["runtime_us"] > 2 * honest["runtime_us"]


# ---- the fidelity script's ncu parsing (the script itself runs on the GPU machine) -----------------------------
def test_parse_ncu_csv():
    import importlib.util

    spec = importlib.util.spec_from_file_location("timing_fidelity", TASKS.parent / "benchmarks" / "timing_fidelity.py")
    fidelity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fidelity)
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')

    def row(i, name, unit, value):
        return (f'"{i}","1","python3","h","{name}","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0",'
                f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"')

    lines = ["==PROF== Connected to process 1", "child: a done", head]
    i = 0
    for group, kernels in (("a", [("softmax_kernel", "1,000")]), ("b", [("gemm", "300"), ("splitk_reduce", "20")])):
        lines.append(row(i, "fidelity_marker_kernel", "nsecond", "2,000"))
        i += 1
        for call in range(3):
            for name, value in kernels:
                lines.append(row(i, name, "nsecond", value.replace("1,000", f"1,{call}00")))
                i += 1
    lines.append("==PROF== Disconnected from process 1")
    parsed = fidelity.parse_ncu_csv("\n".join(lines), ["a", "b"], 3)
    assert parsed["a"]["ncu_us"] == pytest.approx(1.1) and parsed["a"]["kernels_per_call"] == 1
    assert parsed["b"]["ncu_us"] == pytest.approx(0.32) and parsed["b"]["kernels_per_call"] == 2
    assert parsed["b"]["kernel_names"] == ["gemm", "splitk_reduce"]


def test_every_graph_replay_starts_on_poisoned_outputs(tmp_path):
    """An entry that keeps one output buffer (as a CUDA graph's outputs are) and does the work only when that buffer
    holds the poison would, if only checked replays were poisoned, do the work on those and keep their right answer
    through the rest, timed at nothing. Every replay starts poisoned, so every call does the work."""
    job = Job(device="cpu", bench=[_entry({"M": 8, "N": 16})], allow_torch_compute=True,
              timing={"cap_s": 30.0, "min_reps": 12, "max_reps": 12, "graph_under_us": 1e9})
    buf: list[torch.Tensor] = []
    computed: list[bool] = []  # per call, in order: did it do the work

    def fn(x):
        if not buf:
            buf.append(torch.full_like(x, float("nan")))
        computed.append(bool(torch.isnan(buf[0]).any()))  # a checked call's buffer is poisoned: only then compute
        if computed[-1]:
            torch.softmax(x, -1, out=buf[0])
        return buf[0]

    [r] = bench_entry(fn, job, tmp_path)
    assert r["mode"] == "graph" and r["reps"] == 12
    replays = [computed[-r["calls_per_replay"] * (i + 1):][: r["calls_per_replay"]] for i in range(12)]
    # each timed replay's first call found the poison and computed (the rest of a replay may reuse it: one buffer,
    # the same input values); with only the checked replays poisoned, most replays computed nothing
    assert all(rep[0] for rep in replays), [sum(rep) for rep in replays]


def test_a_copy_ceiling_measured_on_a_busy_gpu_is_not_judged_against(task, cache):
    """2026-12-03 on the H200: the copy ceiling measured beside three other test processes (1651 GB/s, 4250 alone)
    was cached, and the honest tuned softmax at 4015 GB/s failed as "faster than a device copy: impossible". A
    figure under PLAUSIBLE_FRACTION of a known GPU's datasheet is not used (the datasheet's is, labelled), and the
    next baseline process measures it again (ensure_ceilings)."""
    busy = {"gpu": "NVIDIA H200", "bandwidth_gbps": 1651.0, "tflops": {"bfloat16": 780.0},
            "source": {"bandwidth_gbps": "measured: copy"}}
    roofline.save_ceilings(roofline.ceilings_path("NVIDIA H200"), busy)
    assert roofline.implausible(busy, "NVIDIA H200") == ["bandwidth_gbps"]
    assert roofline.implausible({**busy, "bandwidth_gbps": 4250.0}, "NVIDIA H200") == []
    assert roofline.implausible(busy, "Some Future GPU") == []  # no datasheet to judge by
    loaded = roofline.load_ceilings("NVIDIA H200")
    assert loaded["bandwidth_gbps"] == 4800.0 and "busy GPU" in loaded["source"]["bandwidth_gbps"]
    assert loaded["tflops"]["bfloat16"] == 780.0  # the plausible figure is kept
    honest_us = 8 * 32768 * 8192 / 4015e9 * 1e6
    verdict = roofline.rung(task, _bench_result(honest_us))
    assert "impossible" not in verdict.message and "busy GPU" in verdict.details
    # the same figure measured alone stays the judge: 4015 GB/s is not past a 4250 GB/s copy
    roofline.save_ceilings(roofline.ceilings_path("NVIDIA H200"), {**busy, "bandwidth_gbps": 4250.0})
    assert roofline.load_ceilings("NVIDIA H200")["bandwidth_gbps"] == 4250.0
