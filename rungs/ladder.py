"""The ladder: precheck -> compile -> run -> correctness -> benchmark -> dumps -> profile -> roofline.

Each rung is a function from what earlier rungs learned to a RungResult. Candidate code runs only in
worker processes (rungs/sandbox.py); everything judged here runs in the harness's own process.
On a CPU, compile is ahead of time for sm_90a and run goes through the Triton interpreter; benchmark
and profile are skipped: no CUDA device.
"""
from __future__ import annotations

import os
import re
import secrets
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from rungs.core.spec import TaskSpec
from rungs import blame
from rungs import correctness as correctness_rung
from rungs import dumps as dumps_rung
from rungs.cases import Case, make_cases, write_inputs
from rungs.precheck import precheck
from rungs.core.result import RungResult, Verdict, headline
from rungs.sandbox import JobOutcome, job_readable, prestart, remove_tree, run_worker, sandbox_note, warm_next

ORDER = ["precheck", "compile", "run", "correctness", "benchmark", "dumps", "profile", "roofline"]


def cuda_available() -> bool:
    return torch.cuda.is_available()


@dataclass
class Ladder:
    """Everything one candidate's climb needs and learns."""

    task: TaskSpec
    kernel: Path
    work_dir: Path
    """Scratch for job files; removed afterwards unless keep_work."""
    dump_dir: Path | None = None
    """Where compiler dumps go (dumps/<run>/<iter>/); None: inside work_dir."""
    previous_dump_dir: Path | None = None
    """The last iteration's dumps, for the resource-summary diff."""
    on_rung: Callable[[str], None] | None = None
    """Called with a rung's name as it starts (the live view)."""
    on_result: Callable[[RungResult], None] | None = None
    """Called with each rung's result as it is known (progress lines)."""
    seeds: int | None = None
    base_seed: int | None = None
    """Seed of the first case; None draws a fresh one, so inputs differ on every climb (recorded in the verdict)."""
    keep_work: bool = False
    static_checks: bool = True
    """Screen the source for known cheating tricks (rungs/static_checks.py). Tests of the sandbox's own defences
    turn it off to reach the worker with kernels the screen would refuse."""
    baseline_cache: Path | None = None
    """Where eager and torch.compile baseline timings are cached (one JSON per task and bench shapes), so a run
    times them once; None: inside work_dir, so every climb times them again."""
    profile_cache: Path | None = None
    """Where ncu profiles are cached by kernel file, bench shape and GPU, so re-checking a kernel does not profile it
    again; None: ~/.cache/kernel-harness/ncu (rungs/profile.py)."""
    device: str = field(default_factory=lambda: "cuda" if cuda_available() else "cpu")
    results: list[RungResult] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    outcome: JobOutcome | None = None
    launcher_failure: RungResult | None = None
    """The run rung's verdict when the candidate's own Python (not Triton's compiler) failed during compile."""

    # ---- the climb -------------------------------------------------------------------------------
    def climb(self) -> Verdict:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            for name in ORDER:
                if self.failed is not None and name not in ("dumps",):
                    result = RungResult(name=name, status="skip", message=f"after {self.failed} failed")
                else:
                    if self.on_rung:
                        self.on_rung(name)
                    t0 = time.monotonic()
                    result = self._guarded(name)
                    result.seconds = round(time.monotonic() - t0, 3)
                self.results.append(result)
                if self.on_result:
                    self.on_result(result)
        finally:
            if not self.keep_work:
                remove_tree(self.work_dir)  # the profile's folder is the candidate's to shape
            warm_next(self.device, job_readable(getattr(self, "job", {})))
        failed = self.failed
        return Verdict(verdict="fail" if failed else "pass", failed_rung=failed, rungs=self.results,
                       sandbox=sandbox_note())

    def _guarded(self, name: str) -> RungResult:
        """A rung's result; an exception in it (over what a candidate's worker left, which the candidate may have
        shaped) fails this candidate's climb with the reason instead of ending the run."""
        try:
            return getattr(self, f"rung_{name}")()
        except Exception as exc:  # noqa: BLE001 - the run goes on; the traceback is in the details
            return RungResult(name=name, status="fail", details=traceback.format_exc()[-4000:],
                              message=f"the {name} rung could not judge what the worker left ({type(exc).__name__}: "
                                      f"{str(exc)[:200]}): a malformed result, or a harness bug (traceback in details)")

    @property
    def failed(self) -> str | None:
        return next((r.name for r in self.results if r.status == "fail"), None)

    # ---- rungs -----------------------------------------------------------------------------------
    def rung_precheck(self) -> RungResult:
        if not self.kernel.is_file():
            return RungResult(name="precheck", status="fail", message=f"kernel file {self.kernel} not found")
        return precheck(self.kernel.read_text(), self.kernel, self.task.entry, self.task.dsl, self.static_checks)

    def rung_compile(self) -> RungResult:
        if self.base_seed is None:
            self.base_seed = secrets.randbelow(1 << 30)
        self.cases = make_cases(self.task, self.task.shapes.test, self.seeds or self.task.seeds, with_reference=True,
                                base_seed=self.base_seed)
        self.job_dir = self.work_dir / "job"
        self.job = {"kernel": str(self.kernel.resolve()), "entry": self.task.entry, "dsl": self.task.dsl,
                    "device": self.device, "cases": write_inputs(self.cases, self.job_dir), "bench": [],
                    "allow_torch_compute": self.task.allow_torch_compute, "timeout_s": self.task.timeout_s}
        self.job["prefetch"] = os.environ.get("HARNESS_BENCH_PREFETCH", "1") != "0"  # 0 turns it off
        if self.device == "cuda":  # one process compiles, runs and times: no second CUDA start-up
            from rungs.benchmark import bench_entries

            self.job["bench"] = bench_entries(self.task)  # timings of a wrong kernel are discarded afterwards
            # Called once more after timing, on inputs it has never seen (rungs/guards.after_bench).
            largest = max(self.cases, key=lambda c: sum(v.numel() for v in c.inputs if isinstance(v, torch.Tensor)))
            self.recheck_case = make_cases(self.task, [largest.shape], 1, with_reference=True,
                                           base_seed=self.base_seed + 7_777_777)[0]
            self.recheck_case.id = "r000"
            self.job["recheck"] = write_inputs([self.recheck_case], self.job_dir)[0]
            self.job["phases"] = ["compile", "run"] + (["bench"] if self.job["bench"] else [])
        else:
            self.job["phases"] = ["compile"]
            prestart("cpu", interpret=True)  # the run rung's interpreter worker starts up while this one compiles
        self.spawned_at = time.monotonic()
        self.outcome = run_worker(self.job_dir, self.job, self.task.timeout_s, interpret=False)
        phase = self.outcome.phases.get("compile")
        if phase is None:
            return self._compile_died()
        if not phase["ok"]:
            return RungResult(name="compile", status="fail", message=_compile_message(phase["error"]),
                              details=phase["error"])
        self.compiled = phase
        names = ", ".join(k["name"] for k in phase["kernels"]) or "none"
        metrics = {"kernels": len(phase["kernels"]), "import_s": round(phase["import_s"], 3),
                   "compile_s": round(phase["compile_s"], 3),
                   "sandbox": "; ".join(self.outcome.notes)}
        if phase.get("launcher_error"):  # the entry's own Python raised: Triton compiled what it was given
            error, where = phase["launcher_error"], blame.raised_at(phase["launcher_error"])
            before = ", before any Triton launch" if phase["launches"] == 0 else ""
            self.launcher_failure = RungResult(name="run", status="fail", details=error,
                                               message=f"{headline(error)} (raised by the entry {where.words()}{before})")
            if phase["launches"] == 0:
                return RungResult(name="compile", status="skip", metrics=metrics,
                                  message="nothing to compile: the entry raised before its first Triton launch (see run)")
            return RungResult(name="compile", status="ok", metrics=metrics,
                              message=f"{len(phase['kernels'])} kernel specialization(s) compiled: {names}; "
                                      "then the entry raised (see run)")
        if self.task.dsl == "triton" and phase["launches"] == 0:
            return RungResult(name="compile", status="fail", metrics=metrics,
                              message="the entry launched no Triton kernel: the task must be computed by a Triton kernel")
        where = "sm_90a ahead of time (no GPU)" if self.device == "cpu" else "this GPU"
        return RungResult(name="compile", status="ok", metrics=metrics,
                          message=f"{len(phase['kernels'])} kernel specialization(s) compiled for {where}: {names}")

    def _compile_died(self) -> RungResult:
        """The compile worker hung or died: Triton's compiler's failure, or the entry's own Python's (run)."""
        assert self.outcome is not None
        died = self.outcome.died_in("compile") or ""
        in_triton = blame.in_triton_at_death(self.job_dir)
        where = blame.hung_at(self.job_dir, self.kernel) if self.outcome.timed_out else None
        if where is not None and where.in_triton is not None:
            in_triton = where.in_triton
        said = f"; it was {where.words()}" if where is not None and where.line else ""
        limit = "; the limit is the task's timeout_s or --timeout-s" if self.outcome.timed_out else ""
        if in_triton is False:
            before = ", before any Triton launch" if blame.launches_before_death(self.job_dir) == 0 else ""
            said = said or "; it was in the entry's own Python"
            self.launcher_failure = RungResult(name="run", status="fail", message=f"{died}{said}{before}{limit}")
            return RungResult(name="compile", status="skip",
                              message="unfinished: the entry stopped in its own Python, not in Triton's compiler (see run)")
        return RungResult(name="compile", status="fail", message=f"{died}{said}{limit}")

    def rung_run(self) -> RungResult:
        if self.launcher_failure is not None:
            return self.launcher_failure
        if self.device == "cpu":  # the interpreter must be switched on before triton is imported: a new process
            job = dict(self.job, phases=["run"])
            self.outcome = run_worker(self.job_dir, job, self.task.timeout_s, interpret=True)
        phase = self.outcome.phases.get("run")
        if phase is None:
            died = self.outcome.died_in("run") or ""
            where = blame.hung_at(self.job_dir, self.kernel) if self.outcome.timed_out else None
            if where is not None and where.line:
                died += f"; it was {where.words()}; the limit is the task's timeout_s or --timeout-s"
            return RungResult(name="run", status="fail", message=died)
        if not phase["ok"]:
            return RungResult(name="run", status="fail", message=headline(phase["error"]), details=phase["error"])
        problems = correctness_rung.check_outputs(self.cases, phase["cases"], self.device, self.task)
        seconds = sum(c["seconds"] for c in phase["cases"])
        metrics = {"cases": len(phase["cases"]), "run_s": round(seconds, 3)}
        if problems:
            return RungResult(name="run", status="fail", message=problems[0], metrics=metrics,
                              details="\n".join(problems[:20]))
        return RungResult(name="run", status="ok", metrics=metrics,
                          message=f"{len(phase['cases'])} cases ran; outputs have the right shapes, dtypes and device")

    def rung_correctness(self) -> RungResult:
        return correctness_rung.judge(self.cases, self.job_dir, self.task, self.base_seed)

    def rung_benchmark(self) -> RungResult:
        if self.device != "cuda":
            return RungResult(name="benchmark", status="skip", message="no CUDA device")
        from rungs import benchmark

        return benchmark.rung(self)

    def rung_dumps(self) -> RungResult:
        compiled = self.job_dir / "compiled" if hasattr(self, "job_dir") else None
        if compiled is None or not compiled.is_dir():
            return RungResult(name="dumps", status="skip", message="nothing was compiled")
        dest = self.dump_dir or (self.work_dir / "dumps")
        return dumps_rung.rung(compiled, dest, self.previous_dump_dir)

    def rung_profile(self) -> RungResult:
        if self.device != "cuda":
            return RungResult(name="profile", status="skip", message="no CUDA device")
        from rungs import profile

        return profile.rung(self)

    def rung_roofline(self) -> RungResult:
        bench = next((r for r in self.results if r.name == "benchmark"), None)
        if bench is None or bench.status != "ok":
            return RungResult(name="roofline", status="skip", message=f"no benchmark timing ({bench.message})" if bench else "no benchmark timing")
        from rungs import roofline

        return roofline.rung(self.task, bench)


def _compile_message(error: str) -> str:
    """Triton's CompilationError says 'at LINE:COL:' relative to the kernel's def; keep that with the reason,
    and the candidate's line that launched it."""
    where = re.search(r"at (\d+):(\d+):", error)
    launch = re.findall(r"^\s+\S+\.py:(\d+) in (\w+):", error, flags=re.M)
    reason = headline(error)
    if where:
        reason = f"{reason} (at line {where.group(1)}, column {where.group(2)} of the @triton.jit function"
        reason += f", launched from line {launch[-1][0]} in {launch[-1][1]})" if launch else ")"
    return reason


def check(task: TaskSpec, kernel: Path, work_dir: Path, **kwargs: Any) -> Verdict:
    """One kernel file through the whole ladder."""
    return Ladder(task=task, kernel=kernel, work_dir=work_dir, **kwargs).climb()
