"""One candidate's climb: everything the rungs share, as declared fields.

A rung (rungs/ladder/rung.py) reads what earlier rungs left here and leaves what later ones need; nothing is added to a
Climb outside these fields. `Ladder` (rungs/ladder/ladder.py) is a Climb that walks the ordered rungs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from rungs import backends
from rungs.ladder.cases import Case
from rungs.core.result import RungResult
from rungs.core.spec import TaskSpec
from rungs.worker.job import Job
from rungs.sandbox.pool import JobOutcome, PhaseSession, WorkerPool, default_pool


def cuda_available() -> bool:
    return torch.cuda.is_available()


@dataclass
class Climb:
    # ---- what the climb is given ---------------------------------------------------------------------------
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
    """Screen the source for known cheating tricks (rungs/ladder/static_checks.py). Tests of the sandbox's own defences
    turn it off to reach the worker with kernels the screen would refuse."""
    baseline_cache: Path | None = None
    """Where eager and torch.compile baseline timings are cached (one JSON per task and bench shapes), so a run
    times them once; None: inside work_dir, so every climb times them again."""
    profile_cache: Path | None = None
    """Where ncu profiles are cached by kernel file, bench shape and GPU, so re-checking a kernel does not profile it
    again; None: ~/.cache/kernel-harness/ncu (rungs/ladder/profile.py)."""
    profile_under_us: float | None = None
    """Profile (and witness) only a candidate timed under this: the run's best so far, where a search profiles only
    the candidates that improve on it (`harness run --profile improving`). A slower candidate's time is then the
    worker's word, said in its verdict: it cannot become the run's best without being witnessed. None: every timed
    candidate is profiled."""
    bench_dumps: bool = True
    """The compile phase compiles the bench shapes' kernels too (never runs them), so the dumps show what is timed."""
    device: str = field(default_factory=lambda: "cuda" if cuda_available() else "cpu")
    pool: WorkerPool | None = None
    """The workers this climb's jobs run in; None: the device's default pool (rungs/sandbox/pool.default_pool)."""
    backend: Any = None
    """The task's DSL backend (rungs/backends); None: looked up from task.dsl."""

    # ---- what the rungs learn ------------------------------------------------------------------------------
    results: list[RungResult] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    job: Job | None = None
    """The worker's job, made by the compile rung."""
    job_dir: Path | None = None
    """Where the job's files and the worker's results are (work_dir/job)."""
    session: PhaseSession | None = None
    """On a CPU: the sandbox the compile and run phases share (a fork each of one zygote), made by the compile rung
    and ended with the climb (rungs/sandbox/pool.PhaseSession)."""
    outcome: JobOutcome | None = None
    """What the last worker left: the compile worker's phases (on CUDA also run and bench), then on a CPU the
    interpreter worker's run phase."""
    compiled: dict[str, Any] | None = None
    """The compile phase's result when it compiled (kernels, launches, timings)."""
    recheck_case: Case | None = None
    """CUDA: a case of inputs never seen, called once more after timing (rungs/worker/timed_calls.after_bench)."""
    launcher_failure: RungResult | None = None
    """The run rung's verdict when the candidate's own Python (not the DSL's compiler) failed during compile."""
    spawned_at: float | None = None
    """When the compile job was handed over (the benchmark's breakdown of where the seconds went)."""
    prepared_s: float | None = None
    """Seconds the compile rung spent making the test cases and the job before handing it over (the breakdown)."""
    cases_s: float | None = None
    """The part of prepared_s that made the test cases (inputs and float64 references) and wrote their inputs."""
    bench_reference_s: float | None = None
    """Seconds the bench-shape reference check took, less its wait for the GPU's lock (the benchmark's breakdown)."""
    bench_reference_wait_s: float | None = None
    """Seconds the bench-shape reference's process waited for the GPU's lock (in the breakdown's gpu_wait)."""
    reference_server: Any = None
    """The bench-shape reference server reserved for this climb as its worker starts (benchmark.reserve_reference;
    a rungs.ladder.reference_server._Server), until its job is handed over or the climb ends."""
    bench_reference_parts: dict[str, float] | None = None
    """Of bench_reference_s: the process's start (0 for a kept or reserved one), the first timed calls' checks, the
    picks', and the rest (the job's setup, the answer's trip)."""

    def __post_init__(self) -> None:
        if self.backend is None:
            try:
                self.backend = backends.get(self.task.dsl)
            except backends.UnknownBackend:
                self.backend = None  # the precheck rung says so, in one line
        if self.pool is None:
            self.pool = default_pool(self.device)
        if self.job_dir is None:
            self.job_dir = self.work_dir / "job"

    @property
    def failed(self) -> str | None:
        return next((r.name for r in self.results if r.status == "fail"), None)

    @property
    def executes(self) -> bool:
        """Whether this climb can run the kernel: on a GPU, or on a CPU through the DSL's interpreter."""
        return self.device == "cuda" or bool(self.backend is not None and self.backend.verifies_on_cpu)

    @property
    def label(self) -> str:
        return self.backend.label if self.backend is not None else self.task.dsl

    @property
    def unverified(self) -> str:
        """Why a rung that must run the kernel is skipped: no GPU here, and the DSL has no interpreter."""
        return f"compiled, not verified: no GPU and no {self.label} interpreter"

    @property
    def dumps_dest(self) -> Path:
        """Where this climb's dumps and profile tables go: the run's dumps/<iter>/ folder, else inside work_dir."""
        return self.dump_dir or (self.work_dir / "dumps")

    def result(self, name: str) -> RungResult | None:
        return next((r for r in self.results if r.name == name), None)
