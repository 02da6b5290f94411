"""The worker's timing phases: `bench` times the candidate on each bench shape with rungs/timing/measure.py and the
checked calls (rungs/worker/timed_calls.py); `witness` makes the same calls under Nsight Compute with one drawn call
profiled (rungs/ladder/profile.py); `autotune` times every point of a declared config space and chooses one.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from rungs.backends import WorkerBackend
from rungs.timing.devices import device_for
from rungs.timing.fresh import Fresh, alt_entry
from rungs.timing.inputs import make_bench_inputs, prefetch_seconds
from rungs.timing.measure import NoChecks, TimingConfig, measure
from rungs.worker import autotune
from rungs.worker.calls import GUARD_ERRORS, as_outputs
from rungs.worker.candidate import deterministic, load_candidate, write_json
from rungs.worker.compile_phase import Launches, compile_cases, dropped_reason, out_of_resources
from rungs.worker.job import LAUNCH_LOG, WITNESS_CALLS, Job
from rungs.worker.timed_calls import TimedCalls, after_bench, poison


def phase_autotune(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    """CUDA: time every point of the declared space on the bench shapes and choose the fastest, which the run and
    bench phases then judge. The compile phase's launch records are made again with it, so that the parent compares
    the run phase's launches with those of the same point."""
    space = autotune.current()
    if space is None or len(space) < 2 or not on_cuda:
        return {"ok": True, "configs": []}
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    result = tune_space(entry, space, job, job_dir)
    autotune.choose(result["winner"])
    if result["winner"] != 0:
        launches = Launches()
        restore = backend.install_compile_capture(on_cuda, launches)
        try:
            launch_log = compile_cases(autotune.bound(entry), job, job_dir, launches, "cuda")
        finally:
            restore()
        write_json(job_dir / LAUNCH_LOG.format(phase="compile"), launch_log)
    return {"ok": True, **result}


def phase_bench(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    fn = autotune.bound(load_candidate(job.kernel, job.entry, job, job_dir))
    cases = bench_entry(fn, job, job_dir)
    return {"ok": True, "cases": cases, **after_bench(fn, job, job_dir, on_cuda, cases)}


def phase_witness(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    """Under Nsight Compute (rungs/ladder/profile.py): the bench phase's loop on one bench entry, the parent's drawn
    call profiled, the judged point of a declared config space chosen."""
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    autotune.choose(int((job.witness or {}).get("config", 0)))
    autotune.freeze()
    return witness_entry(autotune.bound(entry), job)


def bench_entry(fn: Callable[..., Any], job: Job, job_dir: Path) -> list[dict[str, Any]]:
    """The worker's `bench` phase: time the candidate on each of job.bench (rungs/ladder/benchmark.py makes them)."""
    import torch
    import torch.utils.deterministic

    # One state for every call of the bench phase: the first call, warm-up, timed calls, the checked ones among
    # them and the recheck after timing (timed_calls.after_bench). It is not the run phase's: there torch fills fresh
    # memory with NaN (deterministic mode), a fill kernel per output that would be timed inside the call (a full
    # extra write of a 1 GiB softmax output, +50%). Here fresh output memory is poisoned through the allocator
    # instead: every call's outputs are filled with NaN after its sample ends (timed_calls.TimedCalls.after), so the
    # next call's torch.empty most likely gets NaN memory, the same for checked and unchecked calls.
    deterministic(False)
    torch.utils.deterministic.fill_uninitialized_memory = False
    cfg = TimingConfig.from_dict(job.timing)
    dev = device_for(job.device, cfg)
    results = []
    for entry in job.bench:
        inputs, inputs_s = make_bench_inputs(entry, job.device)
        alt, alt_s = make_bench_inputs(alt_entry(entry), job.device)
        checks = TimedCalls(job, entry["id"], job_dir)
        with torch.no_grad():
            result = measure(fn, inputs, dev, cfg, checks=checks, fresh=Fresh(alt, job.fresh_seed))
        inputs_s += alt_s
        del inputs, alt
        dev.release()
        results.append({"id": entry["id"], "shape": entry["shape"], "dtype": entry["dtype"], "gpu": dev.name,
                        "inputs_s": inputs_s, "inputs_background_s": prefetch_seconds(), **result})
    return results


class Witnessed(NoChecks):
    """Calls as the bench phase makes them (fresh inputs, outputs poisoned after each), with Nsight Compute's range
    (cudaProfilerStart/Stop: ncu runs with --profile-from-start off) around call `call` alone. Nothing before that
    call's launch tells it apart; the range closes once it returned, so what it launched is what ncu measures."""

    def __init__(self, call: int) -> None:
        self.call_index = call

    def call(self, dev: Any, fn: Callable[..., Any], args: Sequence[Any], i: int) -> Any:
        if i != self.call_index:
            return dev.call(fn, args)
        import torch

        torch.cuda.profiler.start()
        try:
            return dev.call(fn, args)
        finally:
            torch.cuda.profiler.stop()

    def after(self, outputs: Any, args: Sequence[Any], i: int) -> None:
        poison(as_outputs(outputs), args)


def witness_entry(fn: Callable[..., Any], job: Job) -> dict[str, Any]:
    """The worker's `witness` phase: the bench phase's loop on one bench entry, in its state, with the parent's
    drawn call profiled (Witnessed)."""
    import torch
    import torch.utils.deterministic

    deterministic(False)  # the bench phase's state (bench_entry)
    torch.utils.deterministic.fill_uninitialized_memory = False
    spec = job.witness or {}
    entry = next(e for e in job.bench if e["id"] == spec.get("bench_id"))
    call = int(spec["call"])
    cfg = TimingConfig(**{**TimingConfig.from_dict(job.timing).as_dict(), "warmup_ms": 0.0, "graph_under_us": 0.0,
                          "min_reps": WITNESS_CALLS, "max_reps": WITNESS_CALLS, "cap_s": 60.0, "keep_samples": 0})
    dev = device_for(job.device, cfg)
    inputs, _ = make_bench_inputs(entry, job.device)
    alt, _ = make_bench_inputs(alt_entry(entry), job.device)
    with torch.no_grad():
        result = measure(fn, inputs, dev, cfg, checks=Witnessed(call), fresh=Fresh(alt, job.fresh_seed))
    return {"ok": True, "bench_id": entry["id"], "calls": result["calls"], "runtime_us": result["runtime_us"]}


AUTOTUNE_WARMUP_MS = 50.0
"""Warm-up per point and shape while autotuning: the winner is timed again in full by the bench phase."""


def tune_space(entry: Callable[..., Any], space: Any, job: Job, job_dir: Path) -> dict[str, Any]:
    """The worker's autotune phase: time every point of the declared space (rungs/worker/autotune.py) on every bench
    shape with `measure` and its checked calls, within job.autotune_s seconds; the fastest over the sum of the shapes
    wins. Points the budget leaves untimed, and points that raised, cannot win; with none timed the default does."""
    import torch
    import torch.utils.deterministic

    deterministic(False)  # the bench phase's state (bench_entry)
    torch.utils.deterministic.fill_uninitialized_memory = False
    base = TimingConfig.from_dict(job.timing)
    shapes = max(len(job.bench), 1)
    share = max(job.autotune_s, 0.0) / (max(len(space) - len(space.dropped), 1) * shapes)
    cfg = TimingConfig(**{**base.as_dict(), "warmup_ms": min(base.warmup_ms, AUTOTUNE_WARMUP_MS),
                          "cap_s": max(0.05, min(base.cap_s, 0.5 * share)), "keep_samples": 0})
    dev = device_for(job.device, cfg)
    t0 = time.monotonic()
    inputs = {e["id"]: make_bench_inputs(e, job.device, keep=True)[0] for e in job.bench}
    rows: list[dict[str, Any]] = []
    for k, label in enumerate(space.labels):
        row: dict[str, Any] = {"config": k, "label": label, "status": "timed", "per_shape": {}}
        rows.append(row)
        if k in space.dropped:  # failed to build or run at the compile phase: never timed
            row.update(status="dropped", error=space.dropped[k])
            continue
        if time.monotonic() - t0 > job.autotune_s:
            row["status"] = "over budget"
            continue
        with autotune.chosen(k):
            fn = autotune.bound(entry)
            for e in job.bench:
                checks = TimedCalls(job, f"{e['id']}-cfg{k}", job_dir, save=False)
                try:
                    with torch.no_grad():
                        r = measure(fn, inputs[e["id"]], dev, cfg, checks=checks)
                except GUARD_ERRORS:
                    raise
                except Exception as exc:  # noqa: BLE001 - this point fails: it cannot win
                    if out_of_resources(exc):  # past the hardware at the bench shape (Triton checks shared memory
                        space.dropped[k] = dropped_reason(exc, False)  # at the first launch): dropped, as at compile
                        row.update(status="dropped", error=space.dropped[k])
                    else:
                        row.update(status="error", error=f"{type(exc).__name__}: {str(exc)[:300]}")
                    dev.sync()
                    break
                report = checks.report
                row["per_shape"][e["id"]] = {"runtime_us": r["runtime_us"], "iqr_us": r["iqr_us"], "reps": r["reps"],
                                             "mode": r["mode"], "no_launch": len(report["no_launch"])}
        if row["status"] == "timed":
            row["runtime_us"] = sum(v["runtime_us"] for v in row["per_shape"].values())
    del inputs
    dev.release()
    timed = [r for r in rows if r["status"] == "timed"]
    winner = min(timed, key=lambda r: r["runtime_us"])["config"] if timed else 0
    return {"configs": rows, "winner": winner, "kind": space.kind, "seconds": time.monotonic() - t0,
            "budget_s": job.autotune_s, "gpu": dev.name}
