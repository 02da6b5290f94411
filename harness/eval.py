"""`harness eval`: a suite of KernelBench problem files, each through the ladder, and the suite's scores.

An eval folder `evals/<id>/` holds `eval.json` (what was asked), `results.jsonl` (one line per finished problem,
appended as each finishes: a killed eval, started again with the same arguments, skips what is there), and the
reports rebuilt from those lines: `summary.json`, `report.md`, `report.html` (self-contained).

Scores, as KernelBench defines them: fast_p is the fraction of ALL problems whose solution is correct and more than
p times faster, for p = 0, 1, 1.5, 2, against eager torch and against torch.compile, for the suite and per level
(fast_0: the correct rate); geometric-mean speedups over eager torch and torch.compile over the correct, timed
problems. With no timings (a CPU), fast_p for p > 0 is "not measured", never 0.
"""
from __future__ import annotations

import glob
import functools
import hashlib
import json
import math
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterable

from rungs.core.atomic import atomic_write
from rungs.core.errors import BadInput

FAST_P = (0.0, 1.0, 1.5, 2.0)
"""The p of fast_p the suite reports (KernelBench's own set)."""


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
    precision: str = "fp32"
    """fp32 | bf16 | fp16: the dtype the problem's float inputs and weights were cast to, reference and solution
    alike (`harness eval --precision`)."""
    judged: str = ""
    """What the verdict was reached on (`judged_on`): the problem file, the solution file and the code that judges. A
    resumed eval judges again a problem whose line says other than now: an edited solution kept its old verdict."""
    rung_seconds: dict[str, float] = field(default_factory=dict)
    """Where the problem's wall time went, per rung (on a GPU with the bench and run phases under `benchmark` and
    `run`, the reference's eager and torch.compile timings as `baselines`, waits for another process's timing on
    the same GPU as `gpu_wait`: split_seconds), and `other` for the rest (the problem's load, the time between
    rungs). benchmarks/kernelbench_level.py prints it per problem."""


# ---- which problems ------------------------------------------------------------------------------------------
def is_problem_source(text: str) -> bool:
    """A KernelBench problem's source: `class Model`, get_inputs and get_init_inputs, and no `class ModelNew` (a
    solution that carries its own get_inputs, as written ones often do, is not a second problem of that name)."""
    return (re.search(r"^class\s+Model\s*[(:]", text, re.M) is not None
            and re.search(r"^class\s+ModelNew\b", text, re.M) is None
            and "def get_inputs" in text and "def get_init_inputs" in text)


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
def eval_id(problems: list[Path], solutions: Path | None, model: str | None, dsl: str,
            precision: str = "fp32") -> str:
    """The same arguments give the same id, so running the command again resumes it (fp32's ids are those from
    before --precision existed)."""
    what = solutions.resolve().name if solutions else (model or "none").replace(":", "-").replace("/", "-")
    asked: list[Any] = [[str(p.resolve()) for p in problems], str(solutions and solutions.resolve()), model, dsl]
    if precision != "fp32":
        asked.append(precision)
    h = hashlib.sha256(json.dumps(asked).encode())
    return f"{what}-{dsl}{'' if precision == 'fp32' else '-' + precision}-{h.hexdigest()[:8]}"


@functools.cache
def code_fingerprint() -> str:
    """The code that judges a solution: the rungs, the worker and the sandbox (rungs/), and the shapes a problem is
    tested at (harness/kernelbench.py); not the reports, the prices or the CLI."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    files = [p for p in (root / "rungs").rglob("*.py") if p.is_file()] + [root / "harness" / "kernelbench.py"]
    for path in sorted(files):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def judged_on(problem: Path, kernel: Path | None) -> str:
    """A digest of what a problem's verdict rests on: its file, its solution's and the code that judges. A model's
    eval (no solution file) rests on the problem file alone: judging it again would ask the model again, at a cost
    (`--fresh` starts over)."""
    h = hashlib.sha256(code_fingerprint().encode() if kernel is not None else b"model")
    for path in (problem, kernel):
        try:
            h.update(path.read_bytes() if path is not None else b"-")
        except OSError:
            h.update(b"missing")
    return h.hexdigest()[:16]


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


def _start_up(problem: Path, dsl: str, precision: str) -> float:
    """Once per process, before its first problem's clock starts: a load of that problem, untimed and unjudged (a bad
    one fails again, timed, right after). The first load pulls in what torch imports lazily (torch._dynamo, on the
    first meta-device run: 2.4 of this 2-core machine's 2.5 s for the first problem's load, 0.04-0.08 s for later
    ones), which is the eval's start-up, not the problem's time: the seconds it took are returned for the caller to
    leave out (0.0 after the first)."""
    global _started
    if _started:
        return 0.0
    _started = True
    t0 = time.monotonic()
    from harness.kernelbench import LoadTimedOut, ctrl_c_watch, load_problem

    with ctrl_c_watch() as pressed:
        try:
            load_problem(problem, dsl=dsl, precision=precision)
        except LoadTimedOut:  # the problem's fail now: loading it again would wait as long again
            raise
        except KeyboardInterrupt:
            if pressed():  # a Ctrl-C stops the eval; the problem's own raise fails again, judged, right after
                raise
        except (Exception, SystemExit):  # noqa: BLE001 - likewise: exit() in get_inputs fails it, judged
            pass
    return time.monotonic() - t0


def check_problem(problem: Path, kernel: Path | None, dsl: str, timeout_s: float | None = None,
                  seeds: int | None = None, precision: str = "fp32") -> ProblemResult:
    """One problem's solution through the ladder (in this process). Whatever goes wrong is this problem's one-line
    fail, never the eval's end: a bad problem file (`task`), a bad solution (the rung that refused it, naming the
    file), and anything unforeseen (`harness`, with where it was raised)."""
    t0 = time.monotonic()
    base = ProblemResult(problem=problem.stem, path=str(problem), level=problem.parent.name, verdict="fail",
                         precision=precision)
    from harness.kernelbench import ctrl_c_watch

    with ctrl_c_watch() as pressed:
        try:
            t0 += _start_up(problem, dsl, precision)
            _check(base, problem, kernel, dsl, timeout_s, seeds)
        except BadInput as exc:  # the problem's file or setup (a folder the sandbox cannot read): this problem's fail
            base.verdict, base.failed_rung, base.reason = "fail", "task", str(exc)
        except Exception as exc:  # noqa: BLE001 - one problem's surprise must not end a level's eval
            base.verdict, base.failed_rung, base.reason = "fail", "harness", _surprise(exc)
        except (SystemExit, KeyboardInterrupt) as exc:
            # Only the problem file's code runs in this process (the solution's runs sandboxed): its exit() or raise
            # KeyboardInterrupt where no blamed() block names the line (a forward at a later shape). A Ctrl-C stops.
            if isinstance(exc, KeyboardInterrupt) and pressed():
                raise
            code = f" (exit code {exc.code})" if isinstance(exc, SystemExit) else ""
            base.verdict, base.failed_rung = "fail", "task"
            base.reason = f"{problem}: the problem's code raised {type(exc).__name__}{code} while it was judged"
    base.seconds = round(time.monotonic() - t0, 2)
    if base.rung_seconds:
        # the problem's load and whatever ran between rungs (on the H200, 2026-12-02, the warm LayerNorm took 31.9 s,
        # 21.7 of them in rungs, when it came first: importing torch and the ladder was counted as its time then)
        base.rung_seconds["other"] = round(max(0.0, base.seconds - sum(base.rung_seconds.values())), 2)
    return base


def _surprise(exc: Exception) -> str:
    """An unexpected exception in one line: its type, first line and the innermost frame it was raised in."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    at = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    words = str(exc).strip().splitlines()
    return f"internal error: {type(exc).__name__}{': ' + words[0][:300] if words else ''}{at}"


SOLUTION_RUNGS = ("precheck", "compile", "run")
"""Rungs whose failure is the solution file's own (it does not parse, define ModelNew, import or run): the eval's
reason names the file, and the line where the rung knows it."""


def solution_reason(kernel: Path, rung: Any) -> str:
    """A solution-side failure's message prefixed with `file:line`: the line of the innermost of the candidate's
    frames in the worker's short traceback (`  19_ReLU.py:12 in <module>: import foo`), or a syntax error's own."""
    frames = re.findall(rf"^\s+{re.escape(kernel.name)}:(\d+) in ", rung.details or "", re.M)
    line = int(frames[-1]) if frames else None
    if line is None and (m := re.match(r"syntax error at line (\d+)", rung.message)):
        line = int(m.group(1))
    return f"{kernel}{f':{line}' if line else ''}: {rung.message}"


IN_WORKER_BENCH = ("bench_inputs", "bench_first_call", "bench_warmup", "bench_timed", "bench_other", "worker_exit")
"""The benchmark rung's breakdown of the bench phase (rungs/ladder/benchmark.breakdown), which ran within the
compile rung's clock: the worker compiles, runs the cases and times the bench shapes in one process on a GPU."""


def split_seconds(rung_seconds: dict[str, float], bench: dict[str, Any]) -> dict[str, float]:
    """The rungs' seconds regrouped by what the benchmark rung's metrics say happened inside them: the bench phase
    and the run phase of the one GPU worker move from `compile` to `benchmark` and `run`, and the reference's eager
    and torch.compile timings (`baseline_s`, within the benchmark rung's clock) become `baselines`. Moved, not
    added: the sum is unchanged, and the slow part of a problem shows under its own name."""
    parts = bench.get("breakdown_s") or {}
    out = dict(rung_seconds)
    baselines = min(float(bench.get("baseline_s") or 0.0), out.get("benchmark", 0.0))
    out["benchmark"] = out.get("benchmark", 0.0) - baselines
    out["baselines"] = baselines
    compile_s = out.get("compile", 0.0)
    moved_bench = min(max(0.0, sum(float(parts.get(k, 0.0)) for k in IN_WORKER_BENCH)), compile_s)
    moved_run = min(max(0.0, float(parts.get("run", 0.0))), compile_s - moved_bench)
    # waits for another process's timing on this GPU (eval -j N): their own column, not the compile's
    moved_wait = min(max(0.0, float(parts.get("gpu_wait", 0.0))), compile_s - moved_bench - moved_run)
    if moved_wait:
        out["gpu_wait"] = moved_wait
    out["compile"] = compile_s - moved_bench - moved_run - moved_wait
    out["benchmark"] += moved_bench
    out["run"] = out.get("run", 0.0) + moved_run
    return {k: round(v, 2) for k, v in out.items()}


def _check(base: ProblemResult, problem: Path, kernel: Path | None, dsl: str, timeout_s: float | None,
           seeds: int | None) -> None:
    """check_problem's work, filling `base` in; raises BadInput for the problem's own faults."""
    from harness.kernelbench import load_problem
    from rungs.ladder.cases import degenerate_warnings
    from rungs.ladder.ladder import Ladder

    task = load_problem(problem, dsl=dsl, precision=base.precision)
    if timeout_s is not None:
        task = task.model_copy(update={"timeout_s": timeout_s})
    base.notes = [*degenerate_warnings(task), *task.notes]
    base.roofline_note = next((n for n in task.notes if n.startswith("no roofline")), "")
    if kernel is None or not kernel.is_file():
        base.failed_rung, base.reason = "solution", f"no solution file {kernel}" if kernel else "no solution"
        return
    with tempfile.TemporaryDirectory(prefix="harness-eval-", dir=_SCRATCH) as tmp:
        verdict = Ladder(task=task, kernel=kernel, work_dir=Path(tmp) / "work", dump_dir=Path(tmp) / "dumps",
                         baseline_cache=baseline_cache(), seeds=seeds).climb()
    base.verdict, base.failed_rung = verdict.verdict, verdict.failed_rung
    rungs = {r.name: r for r in verdict.rungs}
    base.rung_seconds = {r.name: round(r.seconds, 2) for r in verdict.rungs}
    if verdict.memory_wait_s:  # waited for GPU memory the problems beside it held (eval -j N)
        base.rung_seconds["memory_wait"] = round(verdict.memory_wait_s, 2)
    if verdict.memory_note:
        base.notes.append(verdict.memory_note)
    if verdict.failed_rung:
        failed = rungs[verdict.failed_rung]
        base.reason = solution_reason(kernel, failed) if failed.name in SOLUTION_RUNGS else failed.message
    bench = rungs.get("benchmark")
    if bench is not None and bench.status == "ok":
        base.rung_seconds = split_seconds(base.rung_seconds, bench.metrics)
        m = bench.metrics
        base.runtime_us, base.eager_us, base.compile_us = m.get("runtime_us"), m.get("eager_us"), m.get("compile_us")
        base.speedup_eager, base.speedup_compile = m.get("speedup_vs_eager"), m.get("speedup_vs_compile")
        base.gpu = str(m.get("gpu", ""))
    roof = rungs.get("roofline")
    if roof is not None and roof.status != "skip" and not base.roofline_note:
        base.roofline_fraction = roof.metrics.get("roofline_fraction")


def solve_problem(problem: Path, model: str, dsl: str, runs_dir: Path, timeout_s: float | None,
                  precision: str = "fp32") -> ProblemResult:
    """The loop on one problem with a model and the task's budgets; its best kernel is then checked afresh."""
    from harness.agent import Agent
    from harness.kernelbench import load_problem
    from harness.models import load_model
    from harness.store import RunStore

    task = load_problem(problem, dsl=dsl, precision=precision)
    store = RunStore.create(runs_dir, task, model, task.budgets.model_dump())
    agent = Agent(task=task, model=load_model(model), store=store, budgets=task.budgets, dumps_root=runs_dir / "dumps")
    t0 = time.monotonic()
    agent.run()
    best = store.best()
    kernel = store.iter_dir(best.iteration) / "kernel.py" if best else None
    result = check_problem(problem, kernel, dsl, timeout_s, precision=precision)
    result.seconds = round(time.monotonic() - t0, 2)
    if best is None:
        result.reason = f"the loop found no passing kernel (run {store.root})"
    return result


def _died(args: tuple[Any, ...], exc: BaseException | None = None) -> ProblemResult:
    """The fail of a problem whose process ended without a result (alone in its pool, so it was this problem's code:
    the problem file's os._exit, or the process killed), or raised past check_problem."""
    path = Path(args[0])
    why = (f"its process raised {type(exc).__name__}: {str(exc).strip()[:200]}" if exc is not None else
           "its process ended without a result (the problem file's code exited, or the process was killed)")
    return ProblemResult(problem=path.stem, path=str(path), level=path.parent.name, verdict="fail", failed_rung="task",
                         reason=f"{path}: {why}", precision=args[6])


_SCRATCH: str | None = None
"""In a `-j N` process: the folder of the pool's that its temporary folders go in (_pool_process)."""


def _pool_process(scratch: str) -> None:
    """In each `-j N` process: a Ctrl-C reaches the whole terminal's process group, and a process of the pool that
    took it as an error would carry on with the next problem; the parent stops them all instead. Its sandboxed
    workers' homes and each problem's work folder go in `scratch`, which the parent removes when the pool is done: a
    process the parent ends at a Ctrl-C (SIGTERM) cleans nothing up itself. (Not tempfile.tempdir: the GPU's timing
    lock is found there.)"""
    import signal

    from rungs.sandbox import pool

    global _SCRATCH
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pool.HOMES_DIR = _SCRATCH = scratch


def _one(args: tuple[str, str | None, str | None, str, str, float | None, str]) -> dict[str, Any]:
    """A process pool's task (-j N): plain arguments in, a plain dict out."""
    problem, kernel, model, dsl, runs_dir, timeout_s, precision = args
    if model:
        return asdict(solve_problem(Path(problem), model, dsl, Path(runs_dir), timeout_s, precision))
    return asdict(check_problem(Path(problem), Path(kernel) if kernel else None, dsl, timeout_s,
                                precision=precision))


# ---- the suite -----------------------------------------------------------------------------------------------
def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 3) if values else None


BASELINES = {"eager": "speedup_eager", "compile": "speedup_compile"}
"""What a solution's speed is judged against: eager torch and torch.compile of the reference (the benchmark rung's
timings), each a ProblemResult field."""


def fast_key(p: float) -> str:
    return f"fast_{p:g}"


def fast_p(results: list[ProblemResult], total: int, baseline: str) -> dict[str, float | None]:
    """KernelBench's fast_p against one baseline: the fraction of ALL `total` problems (those not run yet or failed
    count as not fast) whose solution is correct and more than p times faster; fast_0 is the correct rate. With no
    timing against that baseline in any result (a CPU), p > 0 is "not measured" (None), never 0."""
    field_name = BASELINES[baseline]
    correct = [r for r in results if r.verdict == "pass"]
    measured = any(getattr(r, field_name) is not None for r in results)
    scores: dict[str, float | None] = {}
    for p in FAST_P:
        if not total:
            scores[fast_key(p)] = None
        elif p == 0:
            scores[fast_key(p)] = round(len(correct) / total, 4)
        else:
            fast = sum(1 for r in correct if (getattr(r, field_name) or 0.0) > p)
            scores[fast_key(p)] = round(fast / total, 4) if measured else None
    return scores


def summarize(results: list[ProblemResult], total: int, levels: dict[str, int] | None = None) -> dict[str, Any]:
    """The suite's scores: fast_p for p in FAST_P against eager torch (also at the top level, `fast_1`) and
    torch.compile (`fast_p.compile`), over ALL problems; geometric-mean speedups; the same fast_p per level
    (`levels`: how many problems each level has, not run ones included)."""
    correct = [r for r in results if r.verdict == "pass"]
    timed = [r for r in correct if r.speedup_eager is not None]
    both = {b: fast_p(results, total, b) for b in BASELINES}
    by_level = {}
    for level, count in (levels or {}).items():
        mine = [r for r in results if r.level == level]
        by_level[level] = {"problems": count, "finished": len(mine),
                           "correct": sum(1 for r in mine if r.verdict == "pass"),
                           "fast_p": {b: fast_p(mine, count, b) for b in BASELINES}}
    return {"problems": total, "finished": len(results), "correct": len(correct), "timed": len(timed),
            **both["eager"], "fast_p": both,
            "geomean_speedup_eager": _geomean([r.speedup_eager for r in timed]),
            "geomean_speedup_compile": _geomean([r.speedup_compile for r in correct if r.speedup_compile]),
            "measured": any(r.runtime_us is not None for r in results), "levels": by_level,
            "gpu": next((r.gpu for r in results if r.gpu), "")}


def fmt_fast(value: float | None) -> str:
    return "not measured (no GPU timing)" if value is None else f"{value:.3f}"


def fast_lines(summary: dict[str, Any]) -> list[str]:
    """The CLI's summary lines of fast_p: `fast_0: 0.500`, then `fast_1: 0.250 over eager, 0.125 over torch.compile`
    (or `fast_1: not measured (no GPU timing)`) for each p > 0."""
    scores = summary["fast_p"]
    # without a GPU only the shrunk test shapes ran (a kernel right only below some size passes there): said here
    where = "" if summary.get("measured") else " at the shrunk CPU test shapes; the real sizes run only on a GPU"
    lines = [f"fast_0: {fmt_fast(scores['eager']['fast_0'])} (correct{where})"]
    for p in FAST_P[1:]:
        key = fast_key(p)
        eager, compiled = scores["eager"][key], scores["compile"][key]
        if eager is None and compiled is None:
            lines.append(f"{key}: {fmt_fast(None)}")
        else:
            lines.append(f"{key}: {fmt_fast(eager)} over eager, {fmt_fast(compiled)} over torch.compile")
    return lines


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


def write_reports(folder: Path, results: list[ProblemResult], total: int, meta: dict[str, Any],
                  levels: dict[str, int] | None = None) -> dict[str, Any]:
    """summary.json, report.md and report.html, rebuilt from the results."""
    import jinja2

    summary = summarize(results, total, levels)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             undefined=jinja2.StrictUndefined, autoescape=jinja2.select_autoescape(["html"]))
    env.filters["fast"] = fmt_fast
    context = {"summary": summary, "rows": table_rows(results), "meta": meta,
               "fast": [(fast_key(p), p) for p in FAST_P]}
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
    precision: str = "fp32"
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
                     "model": self.model or "", "dsl": self.dsl, "precision": self.precision,
                     "folder": str(self.folder)}
        (self.folder / "eval.json").write_text(json.dumps(self.meta, indent=1))
        done = read_results(self.folder)
        judged = {p.stem: judged_on(p, self.kernel_for(p)) for p in self.problems}
        # a line judged on another problem file, solution or harness is judged again (its newer line wins on read)
        done = {k: r for k, r in done.items() if r.judged == judged.get(k)}
        todo = [p for p in self.problems if p.stem not in done]
        if self.on_start:
            self.on_start(len(self.problems) - len(todo), len(todo))
        results = self._results(todo)
        t0 = time.monotonic()
        try:
            for n, result in enumerate(results, 1):
                result.judged = judged.get(result.problem, "")
                append_result(self.folder, result)
                done[result.problem] = result
                # the pace of this command (a resumed eval counts what it judged itself): problems per hour of wall
                self.meta["pace"] = {"problems": n, "wall_s": round(time.monotonic() - t0, 1), "jobs": self.jobs}
                if self.on_done:
                    self.on_done(result)
                self.report(done)
        finally:
            # A Ctrl-C that lands here (writing a result or the reports, not waiting in _results) must stop the
            # `-j N` pool now: left to the garbage collector, the pool ran on into the interpreter's exit (seen in CI:
            # "interrupted", then killed by SIGINT instead of exit 130).
            results.close()
        return self.report(done)

    def report(self, done: dict[str, ProblemResult]) -> dict[str, Any]:
        ordered = [done[p.stem] for p in self.problems if p.stem in done]
        levels: dict[str, int] = {}
        for p in self.problems:
            levels[p.parent.name] = levels.get(p.parent.name, 0) + 1
        return write_reports(self.folder, ordered, len(self.problems), self.meta, levels)

    def _results(self, todo: list[Path]) -> Generator[ProblemResult, None, None]:
        args = [(str(p), str(k) if (k := self.kernel_for(p)) else None, self.model, self.dsl,
                 str(self.folder / "runs"), self.timeout_s, self.precision) for p in todo]
        if self.jobs <= 1 and self.model:  # a model's loop keeps the terminal (a person answering at it)
            for a in args:
                yield ProblemResult(**_one(a))
            return
        # Climbs side by side in processes of their own (-j 1 too: 2.4 s of start-up an eval): the worker pool's
        # spare workers are per process, and a process that dies does not take the eval with it. A problem file's
        # os._exit() in get_inputs ended a -j 1 eval with exit 0 and no word, and a -j 2 one with "internal error:
        # BrokenProcessPool" (red team, 2026-12-05): now the problems a broken pool held are each run again alone in
        # a fresh one, and one that ends its process alone is that problem's fail; the rest of the eval goes on.
        pending = list(args)
        alone: list[tuple[Any, ...]] = []
        while pending or alone:
            batch, width = (alone, 1) if alone else (pending, self.jobs)
            broken = yield from self._pool_round(batch, width)
            if width == 1 and broken:
                yield _died(broken[0])
            elif broken:
                alone.extend(broken)

    def _pool_round(self, batch: list[tuple[Any, ...]], width: int) -> Generator[ProblemResult, None, list[Any]]:
        """Problems from `batch` (taken from it as they start) through one pool of `width` processes, until the batch
        is done or the pool breaks; returns the problems the broken pool held."""
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        from rungs.sandbox import leftovers

        # removed by rm once every way out has ended the pool's processes (shutdown, or _stop), and by a later
        # harness's sweep if this one is killed first; a candidate may have shaped a home's job folder inside
        with leftovers.scratch("harness-eval-") as scratch:
            os.chmod(scratch, 0o711)  # the sandbox's user reaches its own home inside, and lists nothing
            pool = ProcessPoolExecutor(width, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_pool_process, initargs=(str(scratch),))
            running: dict[Any, tuple[Any, ...]] = {}
            try:
                while batch or running:
                    while batch and len(running) < width:
                        a = batch.pop(0)
                        running[pool.submit(_one, a)] = a
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for f in done:
                        a = running.pop(f)
                        try:
                            yield ProblemResult(**f.result())
                        except BrokenProcessPool:
                            broken = [a, *running.values()]
                            running.clear()
                            _stop(pool)
                            return broken
                        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - in its process
                            yield _died(a, exc)
                pool.shutdown()
                return []
            except BaseException:
                # Ctrl-C (or an error): stop now. A plain shutdown waits for every problem not yet started, and the
                # interpreter's exit joins the pool again: the eval would go on for minutes after saying
                # "interrupted". What finished is in results.jsonl; the same command resumes from there.
                _stop(pool, terminate=True)
                raise


def _stop(pool: Any, terminate: bool = False) -> None:
    """Shut a pool down without waiting for its problems (`terminate`: SIGTERM to its processes first), then wait
    for its manager thread and its processes, so none is left writing in the pool's folder when the caller removes
    it (a process still there after 5 s is killed). The manager's end matters on its own: the interpreter's exit
    wakes every pool's manager through a pipe the manager closes as it ends, unlocked in Python 3.11, and a Ctrl-C in
    `eval -j 1` printed the race as "OSError: [Errno 9] Bad file descriptor" under a traceback (seen in the suite,
    2026-12-06). Both are read before the shutdown, which drops the pool's references to them (CPython's attributes;
    absent elsewhere, and then there is nothing to wait for)."""
    manager = getattr(pool, "_executor_manager_thread", None)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    if terminate:
        for process in processes:
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(timeout=10)
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
