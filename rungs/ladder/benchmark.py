"""The benchmark rung: the candidate's timings (taken in its own worker, rungs/worker/bench.py) beside eager torch and
torch.compile timed in a trusted process (rungs/ladder/baseline.py), as metrics with units.

On CUDA the ladder runs compile, run and bench in one worker process; the timings wait in its `bench` phase
file until correctness has passed, and are thrown away otherwise. Baselines are timed once per run and cached
as JSON in `Ladder.baseline_cache`.

Metrics (over all bench shapes: sums of per-shape medians; one shape: its own numbers):
runtime_us, iqr_us, gbps, tflops, speedup_vs_eager, speedup_vs_compile, eager_us, compile_us, gpu, per_shape
(the same per shape, plus how it was timed), overhead_s (the candidate's time beyond compiling and timed runs)
and breakdown_s.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.spec import TaskSpec
from rungs.core.result import RungResult, headline
from rungs.core.atomic import atomic_write
from rungs.ladder import autotune_report, forkserver, gpu_memory, reference_server
from rungs.core.fmt import pairs
from rungs.sandbox import gpus
from rungs.sandbox.pool import kept_warm
from rungs.timing import gpu_lock

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

BENCH_SEED = 20261130
BASELINE_TIMEOUT_S = 600.0
REPO_ROOT = Path(__file__).resolve().parents[2]


def bench_entries(task: TaskSpec) -> list[dict[str, Any]]:
    """The job's `bench` list: what the worker needs to make each bench shape's inputs itself."""
    file, _, func = task.inputs.partition(":")
    inputs = f"{task.resolve(file)}:{func}"
    entries = []
    for dtype in task.dtypes:
        for i, shape in enumerate(task.shapes.bench):
            entries.append({"id": f"b{len(entries):02d}", "shape": dict(shape), "dtype": dtype,
                            "seed": BENCH_SEED + i, "dist": task.distributions[0], "inputs": inputs})
    return entries


# ---- baselines -------------------------------------------------------------------------------------------
def baseline_key(task: TaskSpec, entries: list[dict[str, Any]], compile: bool = True) -> str:
    """Changes when the reference, the input maker, the bench shapes or whether torch.compile is timed do. The task's
    name is not in it: the Triton, CuTe DSL, CUDA C++ and TileLang tasks of one workload share their baselines."""
    h = hashlib.sha256(json.dumps([entries, compile], sort_keys=True).encode())
    for ref in (task.reference, task.inputs):
        path = task.resolve(ref.partition(":")[0])
        h.update(ref.encode())
        h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()[:16]


def shared_cache(index: int | None = None) -> Path:
    """Where eager and torch.compile timings are kept when the caller names no folder: per GPU and torch version, in
    the harness's cache (rungs.ladder.roofline.cache_dir, where the ceilings are kept too); the key inside
    (baseline_key) covers the reference, the input maker and the bench shapes, so `harness check`, `harness eval` and
    the tests share it."""
    import re

    import torch

    from rungs.sandbox import gpus
    from rungs.ladder.roofline import cache_dir

    root = cache_dir()
    names = gpus.names()  # from a child process: the harness's own process makes no CUDA context
    gpu = names[index or 0] if names and (index or 0) < len(names) else "cpu"
    return root / "baselines" / re.sub(r"[^A-Za-z0-9._-]+", "_", f"{gpu}-torch{torch.__version__}")


def baseline_path(cache: Path, task: TaskSpec, entries: list[dict[str, Any]], compile: bool = True) -> Path:
    return cache / f"baselines-{baseline_key(task, entries, compile)}.json"


def ensure_baselines(task: TaskSpec, entries: list[dict[str, Any]], cache: Path, timing: dict[str, Any] | None = None,
                     timeout_s: float = BASELINE_TIMEOUT_S, device: str = "cuda",
                     compile: bool = True, pinned: dict[str, str] | None = None) -> tuple[dict[str, Any] | None, str, float]:
    """Baselines for these entries: from the cache, else timed now in a fresh trusted process (on the GPU `pinned`
    names: the climb's pool's, WorkerPool.pinned_env). Returns (baselines or None, a note for the message, seconds
    spent on them here: timing them, or waiting for the GPU or for another process timing them)."""
    path = baseline_path(cache, task, entries, compile)
    if (data := _cached(path)) is not None:
        return data, data.get("error", ""), 0.0
    t0 = time.monotonic()
    job_dir = cache / f"baseline-job-{path.stem.removeprefix('baselines-')}"
    job_dir.mkdir(parents=True, exist_ok=True)
    # Candidates judged in parallel (--candidates, eval, the GPU tests' workers) ask for the same baselines at once:
    # one process times them, the others wait for its file instead of timing the same reference beside it.
    with open(job_dir / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (data := _cached(path)) is None:
            data = _time_baselines(task, entries, path, job_dir, timing, timeout_s, device, compile, pinned)
    return data, data.get("error", ""), time.monotonic() - t0


def _cached(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _time_baselines(task: TaskSpec, entries: list[dict[str, Any]], path: Path, job_dir: Path,
                    timing: dict[str, Any] | None, timeout_s: float, device: str, compile: bool,
                    pinned: dict[str, str] | None) -> dict[str, Any]:
    file, _, func = task.reference.partition(":")
    # eager and torch.compile are timed like a candidate, alone on the GPU: the process takes the GPU's timing lock
    # (rungs/timing/gpu_lock.py) around each timing only, not around its start, torch's import and the inductor
    # compile (tens of seconds a reference, during which every other climb on this GPU waited to time).
    job = {"reference": f"{task.resolve(file)}:{func}", "bench": entries, "device": device, "compile": compile,
           "timing": timing or {}, "ceilings": True,  # measured into roofline.ceilings_path(<its GPU>) once
           "gpu_lock": gpus.identity(pinned) if device == "cuda" else None}
    (job_dir / "job.json").write_text(json.dumps(job))
    env = trusted_env(pinned)
    log = job_dir / "baseline.log"
    try:
        with open(log, "wb") as out:
            proc = forkserver.run([sys.executable, "-P", "-m", "rungs.ladder.baseline", str(job_dir.resolve())],
                                  cwd=job_dir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout_s)
        error = ""
    except subprocess.TimeoutExpired:
        error = f"baselines timed out after {timeout_s:.0f} s"
    result_path = job_dir / "baseline.json"
    if not error and (proc.returncode != 0 or not result_path.is_file()):
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        error = f"baselines failed (exit {proc.returncode}): {tail[0][:200]}"
    # A failure is cached too: the next candidate of this run should not wait for it again.
    data = {"error": error, "cases": []} if error else json.loads(result_path.read_text())
    atomic_write(path, json.dumps(data))
    return data


def trusted_env(pinned: dict[str, str] | None) -> dict[str, str]:
    """The environment of a trusted helper process (baselines, the bench-shape reference): the harness's own, this
    checkout importable, pinned to the climb's GPU."""
    env = {**os.environ, **(pinned or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def baseline_folder(climb: "Climb") -> Path:
    """Where this climb's baselines are cached: the climb's cache, and in it one folder per GPU index when the climb
    is pinned to one (so each GPU's candidates are compared with eager torch timed on that GPU)."""
    index = climb.pool.index if climb.pool is not None else None
    cache = climb.baseline_cache or shared_cache(index)
    return cache if index is None else cache / f"gpu{index}"


# ---- the rung --------------------------------------------------------------------------------------------
def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def shape_rows(task: TaskSpec, cases: list[dict[str, Any]], baselines: dict[str, Any] | None) -> list[dict[str, Any]]:
    by_id = {c["id"]: c for c in (baselines or {}).get("cases", [])}
    rows = []
    for c in cases:
        flops, nbytes = task.floor_terms(c["shape"])
        t = c["runtime_us"] * 1e-6
        base = by_id.get(c["id"], {})
        eager = base.get("eager", {}).get("runtime_us")
        comp = base.get("compile", {}).get("runtime_us")
        rows.append({
            "id": c["id"], "shape": c["shape"], "dtype": c["dtype"],
            "runtime_us": round(c["runtime_us"], 3), "iqr_us": round(c["iqr_us"], 3),
            "gbps": round(nbytes / t / 1e9, 1) if t > 0 else None,
            "tflops": round(flops / t / 1e12, 3) if t > 0 else None,
            "eager_us": round(eager, 3) if eager else None, "compile_us": round(comp, 3) if comp else None,
            "speedup_vs_eager": _ratio(eager, c["runtime_us"]), "speedup_vs_compile": _ratio(comp, c["runtime_us"]),
            "mode": c["mode"], "calls_per_replay": c["calls_per_replay"], "input_sets": c["input_sets"],
            "host_us": round(c["host_us"], 3) if isinstance(c.get("host_us"), float) and math.isfinite(c["host_us"])
            else None, "checked_calls": len((c.get("checked") or {}).get("picks", [])),
            "fresh_inputs": bool(c.get("fresh_inputs")),
            "reps": c["reps"], "rel_se": round(c["rel_se"], 5) if math.isfinite(c["rel_se"]) else None, "stop": c["stop"], "note": c.get("note", ""),
            "eager_error": base.get("eager", {}).get("error"), "compile_error": base.get("compile", {}).get("error"),
            "flops": flops, "bytes": nbytes,
        })
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over shapes: the time of running every bench shape once, and rates over that time."""
    t = sum(r["runtime_us"] for r in rows)
    eager = [r["eager_us"] for r in rows]
    comp = [r["compile_us"] for r in rows]
    eager_us = sum(eager) if all(eager) else None
    compile_us = sum(comp) if all(comp) else None
    return {"runtime_us": round(t, 3), "iqr_us": round(sum(r["iqr_us"] for r in rows), 3),
            "gbps": round(sum(r["bytes"] for r in rows) / (t * 1e-6) / 1e9, 1) if t > 0 else None,
            "tflops": round(sum(r["flops"] for r in rows) / (t * 1e-6) / 1e12, 3) if t > 0 else None,
            "eager_us": round(eager_us, 3) if eager_us else None,
            "compile_us": round(compile_us, 3) if compile_us else None,
            "speedup_vs_eager": _ratio(eager_us, t), "speedup_vs_compile": _ratio(compile_us, t)}


def _number(value: Any) -> float:
    """A figure the worker wrote (a claim: it only splits the seconds shown), or 0.0 where it is not one."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0 else 0.0


def breakdown(climb: "Climb", bench_phase: dict[str, Any], judged_s: float) -> dict[str, float]:
    """Where one candidate's seconds went, from the worker's phase stamps and the ladder's own clocks."""
    phases = climb.outcome.phases
    spawned = climb.spawned_at
    comp, run = phases.get("compile", {}), phases.get("run", {})
    cases = bench_phase.get("cases", [])
    out: dict[str, float] = {}
    if climb.prepared_s is not None:  # made before the worker starts
        made = min(climb.cases_s or 0.0, climb.prepared_s)
        out["cases"] = made  # the test cases' inputs and float64 references
        out["job_prep"] = climb.prepared_s - made  # the rest of the job: bench entries, recheck case, module init
    if spawned is not None and "started" in comp:
        out["worker_start"] = comp["started"] - spawned
    if "wall_s" in comp:
        out["import"] = comp["wall_s"] - comp.get("compile_s", 0.0)
    out["compile"] = comp.get("compile_s", 0.0)
    if phases.get("autotune", {}).get("configs"):
        out["autotune"] = phases["autotune"].get("wall_s", 0.0)  # tuning a declared space: its own budget
    # Seconds each phase waited for another process's timing on this GPU (gpu_lock.py): one part of their own.
    waits = {name: _number(phases.get(name, {}).get("gpu_wait_s")) for name in ("autotune", "run")}
    if "autotune" in out:
        out["autotune"] -= waits["autotune"]
    if "wall_s" in run:
        out["run"] = run["wall_s"] - waits["run"]
    out["bench_inputs"] = sum(c.get("inputs_s", 0.0) for c in cases)
    out["bench_refresh"] = sum(c.get("refresh_s", 0.0) for c in cases)  # fresh values written before every call
    out["bench_first_call"] = sum(c.get("first_call_s", 0.0) for c in cases)
    out["bench_warmup"] = sum(c.get("warmup_s", 0.0) for c in cases)
    out["bench_timed"] = sum(c.get("timed_s", 0.0) for c in cases)
    wait = _number(bench_phase.get("gpu_wait_s"))
    if all_waits := wait + sum(waits.values()) + (climb.bench_reference_wait_s or 0.0):
        out["gpu_wait"] = all_waits
    if "wall_s" in bench_phase:
        out["bench_other"] = bench_phase["wall_s"] - wait - out["bench_inputs"] - out["bench_first_call"] \
            - out["bench_warmup"] - out["bench_timed"]
    if spawned is not None and "started" in bench_phase and "wall_s" in bench_phase:
        out["worker_exit"] = spawned + climb.outcome.seconds - bench_phase["started"] - bench_phase["wall_s"]
    out["judge"] = judged_s
    return {k: round(v, 3) for k, v in out.items()}


def own_shapes(entries: list[dict[str, Any]], phase: dict[str, Any]) -> str | None:
    """The worker's phase file names each timed case by its bench entry's id and repeats the entry's shape and dtype:
    claims. Every entry of the job must be timed, once each, in the job's order; the shape and dtype every later
    figure stands on (the roofline's bytes and FLOPs, the baselines' line, the witnessed shape) are then set from the
    job's own entry, never the file's (a case that claimed a larger shape made its bytes, and its GB/s, larger).
    What is wrong, or None."""
    cases = phase.get("cases")
    ids = [c.get("id") if isinstance(c, dict) else None for c in cases] if isinstance(cases, list) else None
    want = [e["id"] for e in entries]
    if ids != want:
        return (f"the bench phase's timed cases {ids if ids is not None else 'are missing'} are not the job's bench "
                f"shapes {want}, once each in order: the worker's report is refused")
    for case, entry in zip(cases, entries):
        case["shape"], case["dtype"] = dict(entry["shape"]), entry["dtype"]
    return None


def rung(climb: "Climb") -> RungResult:
    t_rung = time.monotonic()
    task: TaskSpec = climb.task
    entries = climb.job.bench if climb.job else []
    if not entries:
        return RungResult(name="benchmark", status="skip", message="the task has no bench shapes")
    phase = climb.outcome.phases.get("bench") if climb.outcome else None
    if phase is None:
        why = climb.outcome.died_in("bench") if climb.outcome else "no worker ran"
        return RungResult(name="benchmark", status="fail", message=f"while timing the bench shapes: {why}")
    if not phase["ok"]:
        return RungResult(name="benchmark", status="fail", details=phase["error"],
                          message=f"the kernel failed on a bench shape: {headline(phase['error'])}")
    unlike = own_shapes(entries, phase)
    if unlike:
        return RungResult(name="benchmark", status="fail", message=unlike)
    integrity_problem = _integrity(climb, phase)
    if integrity_problem:
        return RungResult(name="benchmark", status="fail", message=integrity_problem)
    cache = baseline_folder(climb)
    cache.mkdir(parents=True, exist_ok=True)
    baselines, note, baseline_s = ensure_baselines(task, entries, cache, (climb.job.timing if climb.job else None),
                                                   pinned=climb.pool.pinned_env() if climb.pool else None)
    rows = shape_rows(task, phase["cases"], baselines)
    from rungs.ladder import integrity

    host_notes = integrity.host_time(phase["cases"])
    tot = totals(rows)
    judged = sum(r.seconds for r in climb.results if r.name in ("run", "correctness"))
    parts = breakdown(climb, phase, judged)
    compile_rung = next((r.seconds for r in climb.results if r.name == "compile"), 0.0)
    bench_rung = time.monotonic() - t_rung - baseline_s
    total = compile_rung + judged + bench_rung
    overhead = total - parts.get("compile", 0.0) - parts.get("autotune", 0.0) - parts["bench_first_call"] \
        - parts["bench_warmup"] - parts["bench_timed"] - parts.get("gpu_wait", 0.0)
    parts["total"] = round(total, 3)
    if climb.bench_reference_s is not None:
        parts["bench_reference"] = climb.bench_reference_s  # the bench-shape reference check: most of this rung's own time
        for name, seconds in (climb.bench_reference_parts or {}).items():  # of which (bench_reference_start, ...)
            parts[f"bench_reference_{name}"] = seconds
    metrics: dict[str, Any] = {**tot, "gpu": phase["cases"][0].get("gpu", ""), "per_shape": rows,
                               "overhead_s": round(overhead, 3), "breakdown_s": parts,
                               "baseline_s": round(baseline_s, 3)}
    rates = f"{tot['gbps']:.0f} GB/s" if tot["gbps"] else ""
    if tot["tflops"]:
        rates += f", {tot['tflops']:.2f} TFLOP/s"
    versus = []
    for key, label, us in (("speedup_vs_eager", "eager torch", tot["eager_us"]),
                           ("speedup_vs_compile", "torch.compile", tot["compile_us"])):
        if tot[key]:
            versus.append(f"{tot[key]:.2f}x {label} ({us:.1f} us)")
    for key, label in (("eager_error", "eager torch"), ("compile_error", "torch.compile")):
        failed = sorted({r[key] for r in rows if r[key]})
        if failed:
            versus.append(f"{label} failed: {failed[0][:150]}")
    if note:
        versus.append(note)
    if isinstance(phase.get("gpu_lock_note"), str) and phase["gpu_lock_note"]:
        versus.append(phase["gpu_lock_note"][:200])
    versus.extend(host_notes)
    spread = f"IQR {tot['iqr_us']:.1f} us"
    over = f"over {len(rows)} bench shapes" if len(rows) > 1 else "at " + _label(rows[0])
    modes = {r["mode"] for r in rows}
    message = f"{tot['runtime_us']:.1f} us median ({spread}) {over}: {rates}" + \
              (f"; {'; '.join(versus)}" if versus else "") + ("; timed by CUDA-graph replay" if modes == {"graph"} else "")
    details = table(rows) + "\n\nper-candidate seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()) \
        + f"; overhead {overhead:.3f}"
    tuned = autotune_report.table(climb)  # a declared config space: every point's times, the chosen one marked
    if tuned is not None:
        metrics["autotune"] = {**tuned["metrics"], "table": tuned["table"]}
        message += f"; {tuned['message']}"
        details += f"\n\nautotune (* = chosen, the build timed above):\n{tuned['table']}"
    return RungResult(name="benchmark", status="ok", metrics=metrics, message=message, details=details)


def _integrity(climb: "Climb", phase: dict[str, Any]) -> str | None:
    """The output rechecked after timing, and the timed loop's host wall time against the events (rungs/ladder/integrity.py)."""
    from rungs.ladder import integrity
    from rungs.ladder import metrics as m

    case = climb.recheck_case
    if case is not None:
        tol = climb.task.tolerances.get(case.dtype)
        problem = integrity.after_bench(case, climb.job_dir, phase, m.thresholds(case.dtype, tol.model_dump() if tol else None))
        if problem:
            return problem
    return _bench_outputs(climb, phase)


REFERENCE_TIMEOUT_S = 900.0


def _bench_outputs(climb: "Climb", phase: dict[str, Any]) -> str | None:
    """Bench-shape correctness (GPU only: the outputs live where they were timed): what the worker says of its timed
    calls (rungs/ladder/integrity.timed_calls), then, in a trusted process (rungs/ladder/bench_reference.py), the first
    timed call's outputs at every bench shape against the harness's own reference, and samples of timed calls picked
    only after they ran against the reference on the fresh inputs those calls saw."""
    import torch

    from rungs.ladder import integrity

    if not torch.cuda.is_available():
        return None
    cases = phase["cases"]
    problem = integrity.timed_calls(cases, label=climb.label)
    if problem:
        return problem
    tolerances = {d: t.model_dump() for d, t in climb.task.tolerances.items()}
    results, error = bench_reference(climb, cases, tolerances)
    if error:
        return error
    for c in cases:
        broken = results.get(c["id"], {}).get("broken")
        if broken:
            label = pairs(c["shape"]) + f" {c['dtype']}"
            return (f"{label}: the timed entry's output does not match the reference at this bench shape: "
                    f"{broken[0]}")
    return None


def _first_output(case: dict[str, Any]) -> str | None:
    """The first timed call's saved outputs, by the name the worker's phase file gives: an output's name or none
    (the trusted process would load whatever file it names)."""
    from rungs.sandbox.pool import OUTPUT_NAME

    name = (case.get("checked") or {}).get("first")
    return name if isinstance(name, str) and OUTPUT_NAME.fullmatch(name) else None


def _reference_of(task: TaskSpec) -> str:
    file, _, func = task.reference.partition(":")
    return f"{task.resolve(file)}:{func}"


def _server_for(climb: "Climb", inputs: str) -> tuple[dict[str, str], str, bool]:
    """The bench-shape reference server's environment, its key (rungs/ladder/reference_server.server_key) and
    whether it may wait for the next candidate: where more are coming, and not for a task whose climbs reserve a
    good part of the GPU (rungs/ladder/gpu_memory.admitted): a waiting server's memory (its CUDA context, at most
    KEEP_DEVICE_BYTES) is outside that ledger, within the share it leaves free."""
    env = trusted_env(climb.pool.pinned_env() if climb.pool else None)
    sized = gpu_memory.bench_bytes(climb.task)
    small = sized is None or sized[0] * gpu_memory.RESERVE_FACTOR <= reference_server.KEEP_FOR_BYTES
    return env, reference_server.server_key(env, _reference_of(climb.task), inputs), kept_warm() and small


def reserve_reference(climb: "Climb") -> None:
    """Reserve this climb's bench-shape reference server as its worker starts (one of the task's waiting idle, else
    one started now: its Python and torch, 5-20 s of a first candidate's benchmark rung on the GPU machines, load
    while the worker compiles, runs and times), where the server would be kept anyway (a run's loop). Its next job
    is this climb's; a climb that never gets there hands it to the next (Ladder's end: reference_server.release)."""
    entries = climb.job.bench if climb.job else []
    if not entries or climb.reference_server is not None:
        return
    env, key, keep = _server_for(climb, entries[0]["inputs"])
    if keep:
        try:
            climb.reference_server = reference_server.reserve(env, key, climb.work_dir)
        except Exception:  # noqa: BLE001 - only a head start: the reference starts its own when reached, as before
            climb.reference_server = None


def bench_reference(climb: "Climb", cases: list[dict[str, Any]],
                    tolerances: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """Run rungs/ladder/bench_reference.py on the saved first-call outputs and the picked timed calls' samples; (results
    per bench id, an error or None)."""
    from rungs.ladder import metrics as m
    from rungs.ladder.cases import _numel_hint

    task: TaskSpec = climb.task
    entries = [e for e in (climb.job.bench if climb.job else []) if any(c["id"] == e["id"] for c in cases)]
    job = {"reference": _reference_of(task), "inputs": entries[0]["inputs"] if entries else "",
           "entries": entries, "outputs": {c["id"]: _first_output(c) for c in cases},
           "picks": {c["id"]: c["checked"].get("picks", []) for c in cases if isinstance(c.get("checked"), dict)},
           "fresh_seed": climb.job.fresh_seed if climb.job else 0,
           "first_full_bytes": climb.job.first_full_bytes if climb.job else 1 << 30,
           "limits": {d: m.thresholds(d, tolerances.get(d)) for d in task.dtypes},
           "small_shapes": sorted((dict(s) for s in task.shapes.test), key=_numel_hint), "small_dtype": task.dtypes[0],
           "cache": str(baseline_folder(climb))}  # the baselines' folder: per run, else per GPU (trusted, hidden)
    pinned = climb.pool.pinned_env() if climb.pool else None
    on_gpu = climb.job is not None and climb.job.device == "cuda"  # untimed GPU work: never beside a timing
    job["gpu_lock"] = gpus.identity(pinned) if on_gpu else None  # taken shared by the process, after its imports
    job_dir = climb.job_dir
    assert job_dir is not None
    env, key, keep = _server_for(climb, job["inputs"])
    job["sent_at"] = time.monotonic()  # what the job then waits for the process's start is its START_KEY
    (job_dir / "bench-reference-job.json").write_text(json.dumps(job))
    t0 = time.monotonic()
    limit = REFERENCE_TIMEOUT_S + gpu_lock.HARNESS_WAIT_S  # its wait for the lock is inside the process now
    reserved, climb.reference_server = climb.reference_server, None  # judge's now: it keeps or closes it
    try:  # the one reserved for this climb, else one kept from an earlier candidate, else a new one
        status, _ = reference_server.judge(job_dir, env, key, limit, keep=keep, reserved=reserved)
    except subprocess.TimeoutExpired:
        return {}, f"the bench-shape reference timed out after {limit:.0f} s"
    path = job_dir / "bench-reference.json"
    if status != 0 or not path.is_file():
        log = job_dir / "bench-reference.log"
        lines = log.read_text(errors="replace").strip().splitlines() if log.is_file() else []
        return {}, f"the bench-shape reference failed (exit {status}): {(lines[-1:] or [''])[0][:200]}"
    from rungs.ladder.bench_reference import START_KEY, WAIT_KEY

    results = json.loads(path.read_text())
    waited = results.pop(WAIT_KEY, 0.0)
    climb.bench_reference_wait_s = _number(waited)
    climb.bench_reference_s = round(time.monotonic() - t0 - climb.bench_reference_wait_s, 3)
    # Where those seconds went, for the breakdown (the trusted process's own clocks: it is the harness's code):
    # its start, the first timed calls' references and comparisons, and the picked calls' fresh-input checks.
    judged = [r for r in results.values() if isinstance(r, dict)]
    first = sum(_number(r.get("first_s")) for r in judged)
    parts = {"start": _number(results.pop(START_KEY, 0.0)), "first_calls": first,
             "picks": sum(_number(r.get("seconds")) for r in judged) - first}
    parts["other"] = max(0.0, climb.bench_reference_s - sum(parts.values()))  # the job's setup, the answer's trip
    climb.bench_reference_parts = {k: round(v, 3) for k, v in parts.items()}
    return results, None


def _label(row: dict[str, Any]) -> str:
    return pairs(row["shape"]) + f" {row['dtype']}"


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'shape':<32} {'runtime_us':>11} {'iqr_us':>8} {'host_us':>8} {'GB/s':>8} {'TFLOP/s':>8} " \
           f"{'eager_us':>10} {'compile_us':>10} {'x eager':>8} {'x compile':>9} {'mode':>6} {'reps':>5}"
    lines = [head]

    def f(v: Any, spec: str) -> str:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return format(v, spec)
        return "-".rjust(int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0))

    for r in rows:
        lines.append(f"{_label(r)[:32]:<32} {f(r['runtime_us'], '11.1f')} {f(r['iqr_us'], '8.2f')} "
                     f"{f(r.get('host_us'), '8.1f')} "
                     f"{f(r['gbps'], '8.0f')} {f(r['tflops'], '8.2f')} {f(r['eager_us'], '10.1f')} "
                     f"{f(r['compile_us'], '10.1f')} {f(r['speedup_vs_eager'], '8.2f')} "
                     f"{f(r['speedup_vs_compile'], '9.2f')} {r['mode']:>6} {r['reps']:>5}")
        if r["note"]:
            lines.append(f"  note: {r['note']}")
    return "\n".join(lines)
