"""`harness eval`: a suite of KernelBench problem files, each through the ladder, and the suite's scores.

An eval folder `evals/<id>/` holds `eval.json` (what was asked), `results.jsonl` (one line per finished problem,
appended as each finishes: a killed eval, started again with the same arguments, skips what is there), and the
reports rebuilt from those lines: `summary.json`, `report.md`, `report.html` (self-contained).

Scores, as KernelBench defines them: fast_p is the fraction of ALL problems whose solution is correct and more than
p times faster than eager torch (fast_0: the correct rate); geometric-mean speedups over eager torch and
torch.compile over the correct, timed problems. With no timings (a CPU), fast_1 and fast_2 are "not measured".
"""
from __future__ import annotations

import glob
import hashlib
import contextlib
import json
import math
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from rungs.core.atomic import atomic_write
from rungs.core.errors import BadInput

FAST_P = (0.0, 1.0, 2.0)


@dataclass
class ProblemResult:
    """One problem's line in results.jsonl."""

    problem: str
    """The problem file's stem (`19_ReLU`): the solution file's name too."""
    path: str
    level: str
    verdict: str
    """pass | fail"""
    failed_rung: str | None = None
    reason: str = ""
    seconds: float = 0.0
    runtime_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    roofline_fraction: float | None = None
    roofline_note: str = ""
    notes: list[str] = field(default_factory=list)
    """Warnings about the problem: degenerate outputs, a shape that could not be shrunk, no roofline."""
    gpu: str = ""
    rung_seconds: dict[str, float] = field(default_factory=dict)
    """Where the problem's wall time went, per rung, and `other` for the rest (the problem's load, the time between
    rungs). The 30 s target per level-1 problem is checked against it."""


# ---- which problems ------------------------------------------------------------------------------------------
def is_problem_source(text: str) -> bool:
    return "class Model" in text and "def get_inputs" in text and "def get_init_inputs" in text


def _natural(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def find_problems(args: Iterable[str]) -> list[Path]:
    """Problem files from folders (searched below), globs and list files (one path a line, `#` comments, relative to
    the list file); files that are not KernelBench problems (solutions, helpers) are left out of folders and globs."""
    found: list[Path] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found += [p for p in sorted(path.rglob("*.py"), key=_natural) if _is_problem(p)]
        elif path.is_file() and path.suffix == ".py":
            found.append(path)
        elif path.is_file():
            for line in path.read_text().splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    found.append((path.parent / line) if not Path(line).is_absolute() else Path(line))
        else:
            matches = sorted((Path(p) for p in glob.glob(arg, recursive=True)), key=_natural)
            if not matches:
                raise BadInput(f"{arg}: no such problem file, folder, glob or list file")
            found += [p for p in matches if p.suffix == ".py" and _is_problem(p)]
    missing = [p for p in found if not p.is_file()]
    if missing:
        raise BadInput(f"{missing[0]}: no such problem file")
    stems: dict[str, Path] = {}
    for p in found:
        if p.stem in stems and stems[p.stem].resolve() != p.resolve():
            raise BadInput(f"two problems are named {p.stem}: {stems[p.stem]} and {p} (solutions are found by name)")
        stems[p.stem] = p
    if not stems:
        raise BadInput(f"no KernelBench problem files in {' '.join(args)}")
    return list(stems.values())


def _is_problem(path: Path) -> bool:
    try:
        return is_problem_source(path.read_text(errors="replace"))
    except OSError:
        return False


# ---- the eval folder -----------------------------------------------------------------------------------------
def eval_id(problems: list[Path], solutions: Path | None, model: str | None, dsl: str) -> str:
    """The same arguments give the same id, so running the command again resumes it."""
    what = solutions.resolve().name if solutions else (model or "none").replace(":", "-").replace("/", "-")
    h = hashlib.sha256(json.dumps([[str(p.resolve()) for p in problems], str(solutions and solutions.resolve()),
                                   model, dsl]).encode())
    return f"{what}-{dsl}-{h.hexdigest()[:8]}"


def read_results(folder: Path) -> dict[str, ProblemResult]:
    """What a previous (maybe killed) eval finished; a half-written last line is ignored."""
    done: dict[str, ProblemResult] = {}
    path = folder / "results.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                data = json.loads(line)
                done[data["problem"]] = ProblemResult(**data)
            except (json.JSONDecodeError, TypeError, KeyError):
                continue
    return done


def append_result(folder: Path, result: ProblemResult) -> None:
    with open(folder / "results.jsonl", "a") as f:  # one write of one line: a kill leaves whole lines or a tail
        f.write(json.dumps(asdict(result)) + "\n")
        f.flush()
        os.fsync(f.fileno())


# ---- one problem ---------------------------------------------------------------------------------------------
def baseline_cache() -> Path:
    """Eager and torch.compile timings of the references, kept per GPU and torch version (rungs/ladder/benchmark.py)."""
    from rungs.ladder.benchmark import shared_cache

    return shared_cache()


_started = False


def _start_up(problem: Path, dsl: str) -> None:
    """Once per process, before its first problem's clock starts: a load of that problem, untimed and unjudged (a bad
    one fails again, timed, right after). The first load pulls in what torch imports lazily (torch._dynamo, on the
    first meta-device run: 2.4 of this 2-core machine's 2.5 s for the first problem's load, 0.04-0.08 s for later
    ones), which is the eval's start-up, not the problem's time."""
    global _started
    if _started:
        return
    _started = True
    from harness.kernelbench import load_problem

    with contextlib.suppress(Exception):
        load_problem(problem, dsl=dsl)


def check_problem(problem: Path, kernel: Path | None, dsl: str, timeout_s: float | None = None,
                  seeds: int | None = None) -> ProblemResult:
    """One problem's solution through the ladder (in this process)."""
    from harness.kernelbench import load_problem  # torch and the ladder: the eval's start-up, once, before the clock
    from rungs.ladder.cases import degenerate_warnings
    from rungs.ladder.ladder import Ladder

    _start_up(problem, dsl)
    t0 = time.monotonic()
    base = ProblemResult(problem=problem.stem, path=str(problem), level=problem.parent.name, verdict="fail")
    try:
        task = load_problem(problem, dsl=dsl)
        if timeout_s is not None:
            task = task.model_copy(update={"timeout_s": timeout_s})
        base.notes = [*degenerate_warnings(task), *task.notes]
        base.roofline_note = next((n for n in task.notes if n.startswith("no roofline")), "")
    except BadInput as exc:
        base.failed_rung, base.reason = "task", str(exc)
        return base
    if kernel is None or not kernel.is_file():
        base.failed_rung, base.reason = "solution", f"no solution file {kernel}" if kernel else "no solution"
        base.seconds = round(time.monotonic() - t0, 2)
        return base
    with tempfile.TemporaryDirectory(prefix="harness-eval-") as tmp:
        try:
            verdict = Ladder(task=task, kernel=kernel, work_dir=Path(tmp) / "work", dump_dir=Path(tmp) / "dumps",
                             baseline_cache=baseline_cache(), seeds=seeds).climb()
        except BadInput as exc:  # the problem's setup (a folder the sandbox cannot read): this problem, not the eval
            base.failed_rung, base.reason = "task", str(exc)
            base.seconds = round(time.monotonic() - t0, 2)
            return base
    base.seconds = round(time.monotonic() - t0, 2)
    base.verdict, base.failed_rung = verdict.verdict, verdict.failed_rung
    rungs = {r.name: r for r in verdict.rungs}
    base.rung_seconds = {r.name: round(r.seconds, 2) for r in verdict.rungs}
    # the problem's load and whatever ran between rungs (on the H200, 2026-12-02, the warm LayerNorm took 31.9 s, 21.7
    # of them in rungs, when it came first: importing torch and the ladder was counted as its time then)
    base.rung_seconds["other"] = round(max(0.0, base.seconds - sum(base.rung_seconds.values())), 2)
    if verdict.failed_rung:
        base.reason = rungs[verdict.failed_rung].message
    bench = rungs.get("benchmark")
    if bench is not None and bench.status == "ok":
        m = bench.metrics
        base.runtime_us, base.eager_us, base.compile_us = m.get("runtime_us"), m.get("eager_us"), m.get("compile_us")
        base.speedup_eager, base.speedup_compile = m.get("speedup_vs_eager"), m.get("speedup_vs_compile")
        base.gpu = str(m.get("gpu", ""))
    roof = rungs.get("roofline")
    if roof is not None and roof.status != "skip" and not base.roofline_note:
        base.roofline_fraction = roof.metrics.get("roofline_fraction")
    return base


def solve_problem(problem: Path, model: str, dsl: str, runs_dir: Path, timeout_s: float | None) -> ProblemResult:
    """The loop on one problem with a model and the task's budgets; its best kernel is then checked afresh."""
    from harness.agent import Agent
    from harness.kernelbench import load_problem
    from harness.models import load_model
    from harness.store import RunStore

    task = load_problem(problem, dsl=dsl)
    store = RunStore.create(runs_dir, task, model, task.budgets.model_dump())
    agent = Agent(task=task, model=load_model(model), store=store, budgets=task.budgets, dumps_root=runs_dir / "dumps")
    t0 = time.monotonic()
    agent.run()
    best = store.best()
    kernel = store.iter_dir(best.iteration) / "kernel.py" if best else None
    result = check_problem(problem, kernel, dsl, timeout_s)
    result.seconds = round(time.monotonic() - t0, 2)
    if best is None:
        result.reason = f"the loop found no passing kernel (run {store.root})"
    return result


def _one(args: tuple[str, str | None, str | None, str, str, float | None]) -> dict[str, Any]:
    """A process pool's task (-j N): plain arguments in, a plain dict out."""
    problem, kernel, model, dsl, runs_dir, timeout_s = args
    if model:
        return asdict(solve_problem(Path(problem), model, dsl, Path(runs_dir), timeout_s))
    return asdict(check_problem(Path(problem), Path(kernel) if kernel else None, dsl, timeout_s))


# ---- the suite -----------------------------------------------------------------------------------------------
def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 3) if values else None


def summarize(results: list[ProblemResult], total: int) -> dict[str, Any]:
    """fast_p over ALL problems (those not run yet count as not correct), geometric-mean speedups."""
    correct = [r for r in results if r.verdict == "pass"]
    timed = [r for r in correct if r.speedup_eager is not None]
    measured = any(r.runtime_us is not None for r in results)
    fast: dict[str, float | None] = {}
    for p in FAST_P:
        key = f"fast_{p:g}"
        if p == 0:
            fast[key] = round(len(correct) / total, 4) if total else None
        else:  # with no timing at all, "not measured", never 0
            fast[key] = round(sum(1 for r in timed if r.speedup_eager > p) / total, 4) if measured and total else None
    return {"problems": total, "finished": len(results), "correct": len(correct), "timed": len(timed), **fast,
            "geomean_speedup_eager": _geomean([r.speedup_eager for r in timed]),
            "geomean_speedup_compile": _geomean([r.speedup_compile for r in correct if r.speedup_compile]),
            "measured": measured, "gpu": next((r.gpu for r in results if r.gpu), "")}


def fmt_fast(value: float | None) -> str:
    return "not measured (no GPU timing)" if value is None else f"{value:.3f}"


def table_rows(results: list[ProblemResult]) -> list[dict[str, str]]:
    """Each result as the report's cells (text)."""
    def num(v: float | None, spec: str, suffix: str = "") -> str:
        return "-" if v is None else f"{v:{spec}}{suffix}"

    rows = []
    for r in results:
        roof = "no roofline" if r.roofline_note else num(r.roofline_fraction, ".2f")
        rows.append({"problem": r.problem, "level": r.level, "verdict": r.verdict, "failed": r.failed_rung or "",
                     "reason": r.reason, "seconds": f"{r.seconds:.1f}", "runtime": num(r.runtime_us, ".1f"),
                     "x_eager": num(r.speedup_eager, ".2f"), "x_compile": num(r.speedup_compile, ".2f"),
                     "roofline": roof, "notes": "; ".join(r.notes)})
    return rows


def write_reports(folder: Path, results: list[ProblemResult], total: int, meta: dict[str, Any]) -> dict[str, Any]:
    """summary.json, report.md and report.html, rebuilt from the results."""
    import jinja2

    summary = summarize(results, total)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             undefined=jinja2.StrictUndefined, autoescape=jinja2.select_autoescape(["html"]))
    env.filters["fast"] = fmt_fast
    context = {"summary": summary, "rows": table_rows(results), "meta": meta}
    data = {"summary": summary, "meta": meta, "results": [asdict(r) for r in results]}
    for name, text in (("summary.json", json.dumps(data, indent=1)),
                       ("report.md", env.get_template("eval.md.j2").render(**context)),
                       ("report.html", env.get_template("eval.html.j2").render(**context))):
        atomic_write(folder / name, text)
    return summary


@dataclass
class Eval:
    """One eval: its problems, how each is solved, and its folder."""

    problems: list[Path]
    folder: Path
    solutions: Path | None = None
    model: str | None = None
    dsl: str = "triton"
    jobs: int = 1
    timeout_s: float | None = None
    on_start: Callable[[int, int], None] | None = None
    """Called with (already done, to do) before the first problem."""
    on_done: Callable[[ProblemResult], None] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def kernel_for(self, problem: Path) -> Path | None:
        return (self.solutions / f"{problem.stem}.py") if self.solutions else None

    def run(self) -> dict[str, Any]:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.meta = {"problems": [str(p) for p in self.problems], "solutions": str(self.solutions or ""),
                     "model": self.model or "", "dsl": self.dsl, "folder": str(self.folder)}
        (self.folder / "eval.json").write_text(json.dumps(self.meta, indent=1))
        done = read_results(self.folder)
        todo = [p for p in self.problems if p.stem not in done]
        if self.on_start:
            self.on_start(len(self.problems) - len(todo), len(todo))
        for result in self._results(todo):
            append_result(self.folder, result)
            done[result.problem] = result
            if self.on_done:
                self.on_done(result)
            self.report(done)
        return self.report(done)

    def report(self, done: dict[str, ProblemResult]) -> dict[str, Any]:
        ordered = [done[p.stem] for p in self.problems if p.stem in done]
        return write_reports(self.folder, ordered, len(self.problems), self.meta)

    def _results(self, todo: list[Path]) -> Iterable[ProblemResult]:
        args = [(str(p), str(k) if (k := self.kernel_for(p)) else None, self.model, self.dsl,
                 str(self.folder / "runs"), self.timeout_s) for p in todo]
        if self.jobs <= 1:
            for a in args:
                yield ProblemResult(**_one(a))
            return
        # Climbs side by side in processes of their own: the worker pool's spare workers are per process.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_one, a) for a in args]
            for f in as_completed(futures):
                yield ProblemResult(**f.result())
