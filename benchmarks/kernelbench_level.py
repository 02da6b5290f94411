"""A KernelBench level through `harness eval` twice, cold then warm, and where each problem's wall time went.

    python3 benchmarks/kernelbench_level.py PROBLEMS SOLUTIONS [--out DIR] [--precision fp32]
                                            [--passes cold,warm] [--record FILE] [--check FILE] [-j N]

Run on the H200 on 2026-12-04 over five level-1 problems at upstream's sizes (README, KernelBench): its warm
figures are in benchmarks/kernelbench_level1_figures.json, which `--check` reads. On a CPU it runs too (the
benchmark and profile rungs skip there), which is how its plumbing was tried.

PROBLEMS is a folder of problem files (e.g. KernelBench/level1), SOLUTIONS a folder of `<problem stem>.py`. The cold
pass runs with a harness cache of its own, emptied first (KERNEL_HARNESS_CACHE=<out>/cache: no eager or
torch.compile baselines, no ceilings, no bench-shape references); the warm pass runs the same eval again (a new
eval folder, `--fresh`) with that cache kept, as a user's second eval on the same GPU does. For each pass it prints
one line per problem with its wall time split as the results' `rung_seconds` hold it (harness/eval.split_seconds):
compile, correctness (the run and correctness rungs), benchmark, profile, reference baselines (eager and
torch.compile timed), other (precheck, dumps, sections, roofline, the problem's load and the time between rungs);
then the level's total.

`--record FILE` writes the warm pass's seconds per problem (less its waits for the GPU: `own_seconds`; and the GPU,
the date) to FILE; `--check FILE` exits 1
when a warm problem took more than twice its figure in FILE (the regression check of issue 36), naming each.
`--passes warm` runs the warm pass alone, on the cache a previous run of this script left in --out (or --cache).
Each pass is one `harness eval` process; a level of 100 problems does not fit one 10-minute device call: run it
from a GPU session of its own, or on a part of the level (a folder or list file of fewer problems).

A level's cold pass does not fit one session's 30 device minutes either. `--passes fill` is the cold pass without
emptying the cache: run on each part of the level in turn (benchmarks/kernelbench_level1_parts/), it leaves every
problem's baselines, ceilings and Nsight Compute profile in `--cache DIR`, which holds all a warm pass reads (the
ncu profiles too: XDG_CACHE_HOME is set under it), so the folder can be carried to the next session's GPU of the
same model and the warm pass run there. `--record` merges into an existing file: the figures of problems not in
this run stay.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = {"compile": ("compile",), "correctness": ("run", "correctness"), "benchmark": ("benchmark",),
           "profile": ("profile",), "baselines": ("baselines",), "gpu_wait": ("gpu_wait", "memory_wait")}
"""The printed columns and the rung_seconds keys each sums; every other key is `other`."""
SLOWER = 2.0
"""A warm problem fails --check when it takes more than this many times its recorded figure."""


def split(rung_seconds: dict[str, float]) -> dict[str, float]:
    """A result's rung_seconds in the printed columns, `other` last; the columns add up to the problem's seconds."""
    out = {col: sum(float(rung_seconds.get(k, 0.0)) for k in keys) for col, keys in COLUMNS.items()}
    named = {k for keys in COLUMNS.values() for k in keys}
    out["other"] = sum(float(v) for k, v in rung_seconds.items() if k not in named)
    return out


def table(results: list[dict[str, Any]]) -> str:
    """One line per problem (verdict, wall seconds, the split) and the level's total."""
    cols = [*COLUMNS, "other"]
    head = f"{'problem':<44} {'verdict':<8} {'wall s':>8} " + " ".join(f"{c:>11}" for c in cols)
    lines = [head]
    totals = dict.fromkeys(cols, 0.0)
    for r in results:
        parts = split(r.get("rung_seconds") or {})
        for c in cols:
            totals[c] += parts[c]
        verdict = r["verdict"] + (f"@{r['failed_rung']}" if r.get("failed_rung") else "")
        lines.append(f"{r['problem'][:44]:<44} {verdict[:8]:<8} {r['seconds']:8.1f} "
                     + " ".join(f"{parts[c]:11.1f}" for c in cols))
    wall = sum(r["seconds"] for r in results)
    lines.append(f"{'level total (' + str(len(results)) + ' problems)':<44} {'':<8} {wall:8.1f} "
                 + " ".join(f"{totals[c]:11.1f}" for c in cols))
    return "\n".join(lines)


def own_seconds(result: dict[str, Any]) -> float:
    """A problem's wall seconds less its waits for the GPU (another problem's timing, or the memory the problems
    beside it held under -j N): what --record writes and --check judges, so a wait is not a regression."""
    waits = split(result.get("rung_seconds") or {})["gpu_wait"]
    return round(max(0.0, float(result["seconds"]) - waits), 2)


def regressions(warm: dict[str, float], figures: dict[str, float], factor: float = SLOWER) -> list[str]:
    """Each warm problem that took more than `factor` times its recorded figure, in words; a problem with no figure
    is not judged (a new problem has none until recorded)."""
    slow = []
    for name, seconds in warm.items():
        figure = figures.get(name)
        if figure is not None and seconds > factor * figure:
            slow.append(f"{name}: {seconds:.1f} s warm, more than {factor:g} x its figure {figure:.1f} s")
    return slow


def cache_env(cache: Path) -> dict[str, str]:
    """The environment that puts everything a warm pass reads under `cache`: the harness's cache (baselines, ceilings,
    SASS summaries) and the Nsight Compute profiles (rungs/ladder/profile.default_cache, under XDG_CACHE_HOME)."""
    return {**os.environ, "KERNEL_HARNESS_CACHE": str(cache.resolve()), "XDG_CACHE_HOME": str((cache / "xdg").resolve())}


MARKER = ".kernelbench-level-cache"
"""The file that says a folder is a cache this script made: the only kind `--passes cold` empties."""


def empty_cache(cache: Path) -> None:
    """Empty a cache this script made (its MARKER inside) or create one; a folder that holds anything else is
    refused (`--cache ""` is the current folder, `--cache ~/.cache/kernel-harness` the harness's home)."""
    if cache.is_dir() and any(cache.iterdir()) and not (cache / MARKER).is_file():
        sys.exit(f"--cache {cache}: not empty and not a cache this script made (no {MARKER} in it): refusing to "
                 "empty it for the cold pass")
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    (cache / MARKER).write_text("made by benchmarks/kernelbench_level.py; --passes cold empties it\n")


def record(path: Path, warm: dict[str, float], gpu: str, precision: str) -> int:
    """Write the warm figures to `path`, keeping those of problems this run did not have (a level measured a part at
    a time) where the file's GPU and precision are this run's (figures of another GPU are refused, in one line);
    returns how many were kept."""
    old = json.loads(path.read_text()) if path.is_file() else {}
    for key, value in (("gpu", gpu or "no GPU"), ("precision", precision)):
        if old.get(key, value) != value:
            sys.exit(f"--record {path}: its figures are for {key} {old[key]!r}, this run's {value!r}: "
                     "record to another file")
    kept = old.get("warm_s", {})
    path.write_text(json.dumps({"gpu": gpu or "no GPU", "date": datetime.date.today().isoformat(),
                                "precision": precision, "warm_s": {**kept, **warm}}, indent=1) + "\n")
    return len(kept.keys() - warm.keys())


def run_pass(name: str, problems: str, solutions: str, out: Path, precision: str, jobs: int = 1,
             cache: Path | None = None) -> list[dict[str, Any]]:
    """One `harness eval` of the level with the harness cache in `cache` (default `out/cache`); its results in the
    problems' order. `jobs` > 1: that many problems side by side (`-j`), their timings taking turns on the GPU's
    timing lock."""
    env = cache_env(cache or out / "cache")
    argv = [sys.executable, "-m", "harness.cli", "eval", problems, "--solutions", solutions, "--evals-dir",
            str(out / "evals"), "--id", name, "--fresh", "--precision", precision, "-j", str(jobs)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    (out / f"{name}.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"{name} pass: harness eval exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    summary = json.loads((out / "evals" / name / "summary.json").read_text())
    print(f"== {name} pass: {wall:.1f} s for the command ({summary['summary']['problems']} problems), "
          f"fast_0 {summary['summary']['fast_0']}", flush=True)
    return summary["results"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems")
    ap.add_argument("solutions")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "kernelbench-level-out")))
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--passes", default="cold,warm",
                    help="cold,warm (default), or one of them; fill: cold without emptying the cache first")
    ap.add_argument("--cache", type=Path, help="the harness cache the passes share (default OUT/cache)")
    ap.add_argument("--record", type=Path, help="write the warm pass's seconds per problem here")
    ap.add_argument("--check", type=Path, help="fail when a warm problem takes more than twice its figure here")
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="problems side by side (harness eval -j): compiles overlap, timings take turns")
    args = ap.parse_args(argv)
    passes = [p for p in args.passes.split(",") if p]
    if not passes or set(passes) - {"cold", "fill", "warm"}:
        ap.error(f"--passes {args.passes}: cold, fill, warm, or cold,warm")
    if (args.record or args.check) and "warm" not in passes:
        ap.error("--record and --check need the warm pass")
    args.out.mkdir(parents=True, exist_ok=True)
    cache = args.cache or args.out / "cache"
    if "cold" in passes:
        empty_cache(cache)
    elif passes[0] == "warm" and not (cache / MARKER).is_file():
        ap.error(f"--passes warm: {cache} holds no cache a cold or fill pass of this script left")
    elif not (cache / MARKER).is_file():  # fill: adds to a cache of its own, made here where none is
        if cache.is_dir() and any(cache.iterdir()):
            ap.error(f"--cache {cache}: not empty and not a cache this script made (no {MARKER} in it)")
        empty_cache(cache)
    warm: dict[str, float] = {}
    gpu = ""
    for name in passes:
        results = run_pass(name, args.problems, args.solutions, args.out, args.precision, args.jobs, cache)
        print(table(results), flush=True)
        if name == "warm":
            warm = {r["problem"]: own_seconds(r) for r in results}
            gpu = next((r["gpu"] for r in results if r.get("gpu")), "")
    if args.record:
        kept = record(args.record, warm, gpu, args.precision)
        print(f"recorded {len(warm)} warm figures in {args.record} ({kept} kept from before)")
    if args.check:
        figures = json.loads(args.check.read_text())["warm_s"]
        slow = regressions(warm, figures)
        for line in slow:
            print(f"SLOWER: {line}")
        if slow:
            return 1
        print(f"check: every warm problem within {SLOWER:g} x its figure in {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
