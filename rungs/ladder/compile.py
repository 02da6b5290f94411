"""The compile rung: the cases are made, the job is handed to a worker, and every kernel the entry launches is
compiled (on a CPU ahead of time for sm_90a; on CUDA the same worker goes on to run and time it).

The entry's own Python may fail before or between launches: that is the run rung's to report (`launcher_failure`),
not the DSL compiler's.
"""
from __future__ import annotations

import os
import secrets
import time
from typing import Any

import torch

from rungs.ladder import autotune_report, blame
from rungs.ladder.cases import make_cases, write_inputs
from rungs.ladder.climb import Climb
from rungs.core.result import RungResult, headline
from rungs.worker.job import Job
from rungs.core.fmt import pairs


def rung(climb: Climb) -> RungResult:
    t_rung = time.monotonic()
    task, label = climb.task, climb.label
    assert climb.backend is not None and climb.job_dir is not None  # precheck refused an unknown DSL
    if climb.base_seed is None:
        climb.base_seed = secrets.randbelow(1 << 30)
    climb.cases = make_cases(task, task.shapes.checked(), climb.seeds or task.seeds, with_reference=True,
                             base_seed=climb.base_seed)
    entries = write_inputs(climb.cases, climb.job_dir)
    climb.cases_s = time.monotonic() - t_rung
    job = Job(kernel=str(climb.kernel.resolve()), entry=task.entry, dsl=task.dsl,
              worker_module=climb.backend.worker_module, device=climb.device,
              cases=entries, allow_torch_compute=task.allow_torch_compute,
              timeout_s=task.timeout_s, autotune_s=task.autotune_s,
              prefetch=os.environ.get("HARNESS_BENCH_PREFETCH", "1") != "0")  # 0: off
    from rungs.ladder.benchmark import bench_entries

    entries = bench_entries(task)
    hollow_notes = []
    if climb.bench_dumps:  # KernelBench too: write_module_init gives ModelNew's arguments at those shapes (no weights)
        job.dump_bench, hollow_notes = _hollow_entries(entries)
    if climb.device == "cuda":  # one process compiles, runs and times: no second CUDA start-up
        job.bench = entries  # timings of a wrong kernel are discarded afterwards
        job.fresh_seed = secrets.randbelow(1 << 62)  # every timed call's own input values (rungs/timing/fresh.Fresh)
        # Called once more after timing, on inputs it has never seen (rungs/worker/timed_calls.after_bench).
        largest = max(climb.cases, key=lambda c: sum(v.numel() for v in c.inputs if isinstance(v, torch.Tensor)))
        climb.recheck_case = make_cases(task, [largest.shape], 1, with_reference=True,
                                        base_seed=climb.base_seed + 7_777_777)[0]
        climb.recheck_case.id = "r000"
        job.recheck = write_inputs([climb.recheck_case], climb.job_dir)[0]
        # autotune: a declared config space is timed and its fastest point chosen before run and bench judge it
        job.phases = ["compile"] + (["autotune"] if job.bench else []) + ["run"] + (["bench"] if job.bench else [])
        job.timeout_s = task.timeout_s + (task.autotune_s if job.bench else 0.0)
    else:
        job.phases = ["compile"]
        if climb.executes:  # the run rung's job runs in a fork of the zygote this one runs in (PhaseSession)
            climb.session = climb.pool.session(task.dsl)
            if climb.session is None:  # no sandbox here: the run rung's interpreter worker starts while this compiles
                climb.pool.prestart(task.dsl, interpret=True)
    module_init = getattr(task, "write_module_init", None)  # KernelBench: ModelNew's arguments and weights
    if module_init is not None:
        recheck = [climb.recheck_case] if climb.recheck_case is not None else []
        job.module_init = module_init(job, climb.job_dir, climb.cases + recheck)
        # get_inputs() draws from torch's global generator: made in a thread beside ModelNew's construction (which
        # draws from it too), the bench inputs would differ from the reference's.
        job.prefetch = False
    climb.job = job
    if climb.device == "cuda":  # its Python and torch load while the worker compiles, runs and times
        from rungs.ladder.benchmark import reserve_reference

        reserve_reference(climb)
    climb.spawned_at = time.monotonic()
    climb.prepared_s = climb.spawned_at - t_rung
    climb.outcome = climb.pool.run(climb.job_dir, job, job.timeout_s, interpret=False, session=climb.session)
    phase = climb.outcome.phases.get("compile")
    if phase is None:
        return _died(climb)
    if not phase["ok"]:
        return RungResult(name="compile", status="fail", details=phase["error"],
                          message=climb.backend.compile_message(phase["error"], source=_source(climb))
                          + autotune_report.failed_config(phase, climb.kernel))
    climb.compiled = phase
    names = ", ".join(k["name"] for k in phase["kernels"]) or "none"
    metrics = {"kernels": len(phase["kernels"]), "import_s": round(phase["import_s"], 3),
               "compile_s": round(phase["compile_s"], 3),
               "sandbox": "; ".join(climb.outcome.notes)}
    if phase.get("launcher_error"):  # the entry's own Python raised: the DSL compiled what it was given
        error, where = phase["launcher_error"], blame.raised_at(phase["launcher_error"])
        before = f", before any {label} launch" if phase["launches"] == 0 else ""
        climb.launcher_failure = RungResult(name="run", status="fail", details=error,
                                            message=f"{headline(error)} (raised by the entry {where.words()}{before})"
                                                    + autotune_report.failed_config(phase, climb.kernel))
        if phase["launches"] == 0:
            return RungResult(name="compile", status="skip", metrics=metrics,
                              message=f"nothing to compile: the entry raised before its first {label} launch (see run)")
        return RungResult(name="compile", status="ok", metrics=metrics,
                          message=f"{len(phase['kernels'])} kernel specialization(s) compiled: {names}; "
                                  "then the entry raised (see run)")
    if phase["launches"] == 0:  # every DSL: a compile capture that saw no launch leaves nothing verified
        return RungResult(name="compile", status="fail", metrics=metrics,
                          message=f"the entry launched no {label} kernel: the task must be computed by a {label} kernel")
    where = "sm_90a ahead of time (no GPU)" if climb.device == "cpu" else "this GPU"
    space = autotune_report.compiled_space(phase, climb.device, climb.kernel, interpreted=climb.executes)
    if space is not None:
        metrics["autotune"] = space["metrics"]
    notes = "".join(f"; {n}" for n in [space["message"] if space is not None else None, *hollow_notes,
                                        phase.get("bench_error")] if n)
    return RungResult(name="compile", status="ok", metrics=metrics,
                      message=f"{len(phase['kernels'])} kernel specialization(s) compiled for {where}: {names}{notes}")


def _source(climb: Climb) -> str | None:
    """The candidate's text, for messages that name its lines; None where it cannot be read."""
    try:
        return climb.kernel.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _hollow_entries(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The bench shapes for the compile phase's build (Job.dump_bench), and a note for each it cannot describe."""
    from rungs.ladder.hollow import hollow_spec

    out, notes = [], []
    for e in entries:
        try:
            out.append({"id": e["id"], "shape": e["shape"], "spec": hollow_spec(e)})
        except Exception as exc:  # noqa: BLE001 - the task's own input maker, on the meta device: said, not fatal
            label = pairs(e["shape"])
            notes.append(f"bench shape {label}: not compiled (its input maker on the meta device: "
                         f"{type(exc).__name__}: {str(exc)[:160]})")
    return out, notes


def _died(climb: Climb) -> RungResult:
    """The compile worker hung or died: the DSL compiler's failure, or the entry's own Python's (run)."""
    assert climb.outcome is not None and climb.job_dir is not None
    label = climb.label
    died = climb.outcome.died_in("compile") or ""
    in_compiler = blame.in_triton_at_death(climb.job_dir)
    where = blame.hung_at(climb.job_dir, climb.kernel) if climb.outcome.timed_out else None
    if where is not None and where.in_triton is not None:
        in_compiler = where.in_triton
    said = f"; it was {where.words()}" if where is not None and where.line else ""
    limit = "; the limit is the task's timeout_s or --timeout-s" if climb.outcome.timed_out else ""
    if in_compiler is False:
        before = f", before any {label} launch" if blame.launches_before_death(climb.job_dir) == 0 else ""
        said = said or "; it was in the entry's own Python"
        climb.launcher_failure = RungResult(name="run", status="fail", message=f"{died}{said}{before}{limit}")
        return RungResult(name="compile", status="skip",
                          message=f"unfinished: the entry stopped in its own Python, not in {label}'s compiler (see run)")
    return RungResult(name="compile", status="fail", message=f"{died}{said}{limit}")
