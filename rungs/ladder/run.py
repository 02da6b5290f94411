"""The run rung: the entry called on every case (through the DSL's interpreter on a CPU, in a worker of its own:
the interpreter must be on before the DSL is imported), its outputs checked for count, shape, dtype and device."""
from __future__ import annotations

from rungs.ladder import blame
from rungs.ladder import correctness as correctness_rung
from rungs.ladder.climb import Climb
from rungs.core.result import RungResult, headline
from rungs.core.tracebacks import kernel_line, libdevice_note


def rung(climb: Climb) -> RungResult:
    if climb.launcher_failure is not None:
        return climb.launcher_failure
    if not climb.executes:
        return RungResult(name="run", status="skip", message=climb.unverified)
    assert climb.job is not None and climb.job_dir is not None
    if climb.device == "cpu":
        climb.outcome = climb.pool.run(climb.job_dir, climb.job.but(phases=["run"]), climb.task.timeout_s,
                                       interpret=True, session=climb.session)
    assert climb.outcome is not None
    phase = climb.outcome.phases.get("run")
    tuned = climb.outcome.phases.get("autotune")
    if phase is None and tuned is not None and not tuned.get("ok"):  # the worker stops at the first failed phase
        return RungResult(name="run", status="fail", details=tuned.get("error"),
                          message=f"while timing the declared config space: {headline(tuned.get('error', ''))}")
    if phase is None:
        died = climb.outcome.died_in("run") or ""
        where = blame.hung_at(climb.job_dir, climb.kernel) if climb.outcome.timed_out else None
        if where is not None and where.line:
            died += f"; it was {where.words()}; the limit is the task's timeout_s or --timeout-s"
        # the cases ran only once the phases before them did (on a GPU, a declared space's autotune phase runs first)
        words, details = _before_death(climb) if tuned is None or tuned.get("ok") else ("", "")
        return RungResult(name="run", status="fail", message=died + words, details=details)
    if not phase["ok"]:
        return RungResult(name="run", status="fail", message=failure_message(climb, phase["error"]),
                          details=phase["error"])
    problems = correctness_rung.check_outputs(climb.cases, phase["cases"], climb.device, climb.task)
    seconds = sum(c["seconds"] for c in phase["cases"])
    metrics = {"cases": len(phase["cases"]), "run_s": round(seconds, 3)}
    if climb.device == "cpu":  # the run phase's own worker, or a fork of the compile phase's zygote (PhaseSession)
        metrics["sandbox"] = "; ".join(climb.outcome.notes)
    if problems:
        return RungResult(name="run", status="fail", message=problems[0], metrics=metrics,
                          details="\n".join(problems[:20]))
    return RungResult(name="run", status="ok", metrics=metrics,
                      message=f"{len(phase['cases'])} cases ran; outputs have the right shapes, dtypes and device")


def _before_death(climb: Climb) -> tuple[str, str]:
    """Which case a worker that died was running (the first with no out file: the worker names a case's file once
    its re-runs are done too), and the first wrong output of those it finished: a kernel that writes out of bounds
    crashed the interpreter at a long shape, and the test shapes before it showed where it went wrong. A saved output
    is the candidate's claim; it can only add to a failure here."""
    if climb.job_dir is None or not climb.cases:
        return "", ""
    done = [c for c in climb.cases if (climb.job_dir / f"out-{c.id}.pt").is_file()]
    at = next((c for c in climb.cases if c not in done), None)
    words = f" in case {at.id} ({at.label()})" if at is not None else ""
    if not done:
        return words, ""
    before = correctness_rung.judge(done, climb.job_dir, climb.task, climb.base_seed, run_cases=[], finished=False)
    if before.status == "fail":
        return f"{words}; of the {len(done)} case(s) it finished: {before.message}", before.details
    return f"{words}, after {len(done)} case(s) that match the reference", ""


def failure_message(climb: Climb, error: str) -> str:
    """The worker's error in one line: the exception, the kernel line that raised it where the traceback names one
    inside a @triton.jit function (the interpreter runs their bodies), and a libdevice call that cannot run in the
    interpreter where that is the cause."""
    parts = [headline(error), kernel_line(error)]
    if climb.device == "cpu":
        try:
            source = climb.kernel.read_text()
        except (OSError, UnicodeDecodeError):
            source = ""
        parts.append(libdevice_note(error, source, climb.kernel.name))
    return "; ".join(p for p in parts if p)
