"""Candidates climbed per hour with --candidates 1 and --candidates 4 (issue 16), through the real loop on this machine.

    python3 benchmarks/candidates_rate.py [softmax gemm] [--rounds 2] [--executor local,ray] [--parallel 4]
                                                                   # on the H200; logs to $OUT when set
    python3 benchmarks/candidates_rate.py PROBLEM.py --solution SOLUTION.py --parallel 4 --only-parallel
                                                                   # a KernelBench problem (a level-2 fusion)

A KernelBench problem's round is its solution four times, each copy with a comment of its own (four passing
candidates: a heavier mix than the demos', which hold a compile failure and a wrong kernel).

For each task a replay transcript is built from its demo transcript's kernels: each round holds the four demos, each
with a comment naming its round and place, so no two sources are alike and every candidate climbs (identical ones
would be climbed once). The task is copied with a roofline target of 1.0 so that no run stops early on the target.
The same kernels go through `--candidates 1` (one per iteration) and `--candidates 4 --strategy beam:2`. The rate
is climbed candidates (records with a kernel of their own) per hour of the run's wall time, model calls included
(a replay answers at once); an untimed `harness check` of the last demo first measures the device's ceilings and
fills torch.compile's on-disk caches, which every case then reads (`--no-warm` leaves it out); a run times its eager
and torch.compile baselines once, so each case's wall time holds that once, as a user's run does. `--executor local,ray` runs each case under each executor (ray: each climb a Ray task
with one GPU, on a local Ray instance; its start is in the wall time). Prints one table last.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kernels_of(task: Path, solution: Path | None) -> list[Path]:
    """A round's kernels: the task's demo transcript's, or for a KernelBench problem its solution four times (each
    copy gets a comment of its own below, so each climbs)."""
    if task.suffix == ".py":
        if solution is None:
            sys.exit(f"{task}: a KernelBench problem needs --solution FILE (its ModelNew)")
        return [solution] * 4
    demo = task.with_name(re.search(r"^transcript:\s*(\S+)", task.read_text(), re.M).group(1))
    return [demo.parent / json.loads(line)["code_file"] for line in demo.read_text().splitlines() if line.strip()]


def transcript(task: Path, rounds: int, tmp: Path, tag: str, solution: Path | None = None) -> Path:
    kernels = kernels_of(task, solution)
    lines = []
    for r in range(rounds):
        turns = []
        for i, k in enumerate(kernels):
            path = tmp / f"{tag}-r{r + 1}c{i + 1}_{k.name}"
            # tmp's name too: no two invocations' sources are alike either (an earlier run's profiles stay cached)
            path.write_text(k.read_text() + f"\n# {tag}: candidate {i + 1} of round {r + 1} "
                                            f"(benchmarks/candidates_rate.py, {tmp.name})\n")
            turns.append({"text": f"round {r + 1}, candidate {i + 1}: {k.name}", "code_file": path.name})
        lines.append(json.dumps({"candidates": turns}))
    out = tmp / f"rounds-{tag}.jsonl"
    out.write_text("\n".join(lines) + "\n")
    return out


def untargeted(task: Path, tmp: Path) -> Path:
    """A copy of the task beside copies of its files, with the target out of reach (100x the roofline: a gemm demo
    measured 102% of its floor, so 1.0 stopped gemm's search after its second round); a KernelBench problem as it is
    (its roofline target, where it has one, stays: a run that reaches it stops early, and its case line says so)."""
    if task.suffix == ".py":
        return task.resolve()
    for f in task.parent.glob(f"{task.stem.split('_')[0]}*_ref.py"):
        shutil.copy(f, tmp / f.name)
    text = re.sub(r"^(\s*target:\s*)[0-9.]+", r"\g<1>100.0", task.read_text(), flags=re.M)
    text = re.sub(r"^transcript:.*$", "", text, flags=re.M)  # the run is given its own
    copy = tmp / task.name
    copy.write_text(text)
    return copy


def climbed(run: Path) -> int:
    if not (run / "events.jsonl").is_file():
        return 0
    events = []
    for line in (run / "events.jsonl").read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # the torn last line of a run cut short
            continue
    kernel = lambda e: run / f"iter-{e['iteration']:03d}" / "kernel.py"
    return sum(1 for e in events if e["type"] == "iteration" and e.get("duplicate_of") is None
               and kernel(e).is_file() and kernel(e).stat().st_size > 0)


def rounds_after_first(run: Path) -> tuple[int, float] | None:
    """(candidates climbed after the run's first round, their wall seconds): the run report's own split
    (harness/report.later_pace); None for a run that never left its first round or cannot be read."""
    from harness.report import later_pace, run_view
    from harness.store import RunStore

    try:
        return later_pace(run_view(RunStore(run)))
    except Exception:  # noqa: BLE001 - a torn journal of a case cut short: the whole-case rate still stands
        return None


def results(run: Path) -> list[tuple[str, dict]]:
    """Each climbed candidate's verdict (result.json), by iteration folder; a torn one is left out."""
    out = []
    for result in sorted(run.glob("iter-*/result.json")):
        try:
            out.append((result.parent.name, json.loads(result.read_text())))
        except json.JSONDecodeError:
            continue
    return out


def rung_seconds(verdicts: list[tuple[str, dict]]) -> dict[str, float]:
    """Seconds each rung took, summed over the climbed candidates."""
    out: dict[str, float] = {}
    for _, v in verdicts:
        for r in v.get("rungs", []):
            out[r["name"]] = out.get(r["name"], 0.0) + float(r.get("seconds") or 0.0)
    return out


def iteration_lines(verdicts: list[tuple[str, dict]]) -> list[str]:
    """Each climbed candidate's verdict and where its seconds went: the compile rung's worker (on a GPU it also runs and
    times; import_s and compile_s are the worker's own) and each later rung that took a second or more."""
    out = []
    for name, v in verdicts:
        rungs = {r["name"]: r for r in v.get("rungs", [])}
        c = (rungs.get("compile") or {}).get("metrics") or {}
        slow = " ".join(f"{n} {r['seconds']:.1f}" for n, r in rungs.items() if (r.get("seconds") or 0) >= 1.0)
        parts = ((rungs.get("benchmark") or {}).get("metrics") or {}).get("breakdown_s") or {}
        top = sorted(((k, x) for k, x in parts.items() if k != "total" and isinstance(x, (int, float))),
                     key=lambda kv: -kv[1])[:5]
        where = (" | where: " + " ".join(f"{k} {x:.1f}" for k, x in top)) if top else ""
        skipped = ((rungs.get("profile") or {}).get("metrics") or {}).get("slower_than_best_us")
        unprofiled = " | not profiled (slower than the best)" if skipped is not None else ""
        out.append(f"{name}: {v.get('verdict')} {v.get('failed_rung') or ''} | {slow} | worker import "
                   f"{c.get('import_s', '-')} s, compile {c.get('compile_s', '-')} s{where}{unprofiled}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tasks", nargs="*", default=["softmax", "gemm"],
                    help="task names under tasks/, or a KernelBench problem file (with --solution)")
    ap.add_argument("--solution", type=Path, help="a KernelBench problem's ModelNew file: each candidate is a copy")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--executor", default="local", help="comma-separated: local, ray")
    ap.add_argument("--parallel", type=int, default=1,
                    help="also a case `--candidates 4 --parallel P`: P pools on the GPU, their climbs overlapping and "
                         "their timings taking turns (rungs/timing/gpu_lock.py)")
    ap.add_argument("--only-parallel", action="store_true",
                    help="leave out the --parallel 1 cases (with --parallel P > 1, only `--candidates 4 --parallel P`)")
    ap.add_argument("--profile", choices=("all", "improving"), default=None,
                    help="passed to harness run (its default: all with one candidate, improving with several)")
    ap.add_argument("--case-timeout", type=float, default=None,
                    help="seconds one case may run; a case cut short counts what it climbed by then")
    ap.add_argument("--no-warm", dest="warm", action="store_false",
                    help="leave out the untimed `harness check` of the task's last demo before its cases (it measures "
                         "the device's ceilings and warms torch.compile's caches, which the cases then share)")
    args = ap.parse_args()
    if sum(name.endswith(".py") for name in args.tasks) > 1:
        ap.error("one KernelBench problem at a time: --solution is its ModelNew")
    if args.only_parallel and args.parallel < 2:
        ap.error("--only-parallel needs --parallel P with P > 1 (it keeps only the `--parallel P` case)")
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    rows, rungs = [], []
    for name in args.tasks:
        spec = Path(name) if name.endswith(".py") else ROOT / "tasks" / f"{name}.yaml"
        name = spec.stem
        tmp = Path(tempfile.mkdtemp(prefix=f"cand-{name}-"))
        tmp.chmod(0o755)  # the sandboxed worker imports the task's input maker from here (mkdtemp makes it 0700)
        task = untargeted(spec, tmp)
        if args.warm:  # so the first case does not pay alone for what every case then reads from a cache
            warm = transcript(spec, 1, tmp, "warm-up", args.solution)
            last = json.loads(warm.read_text().splitlines()[0])["candidates"][-1]["code_file"]
            t0 = time.monotonic()
            try:
                rc = subprocess.run([sys.executable, "-m", "harness.cli", "check", str(task), str(tmp / last), "--json"],
                                    cwd=ROOT, capture_output=True, text=True, timeout=300).returncode
            except subprocess.TimeoutExpired:
                rc = "cut at 300 s"
            print(f"{name}: warm-up check rc {rc} in {time.monotonic() - t0:.1f} s (not counted)", flush=True)
        cases = [] if args.only_parallel else [(n, e, 1) for n in (1, 4) for e in args.executor.split(",")]
        cases += [(4, "local", args.parallel)] if args.parallel > 1 else []
        for n, executor, par in cases:
            tag = f"n{n}-{executor}" + (f"-p{par}" if par > 1 else "")
            # Each case's sources differ from every other case's (and the warm-up's), as a user's new candidates do:
            # no case reads another's compiled kernels or profiles from a cache.
            replay = transcript(spec, args.rounds, tmp, tag, args.solution)
            runs = tmp / f"runs-{tag}"
            iterations = args.rounds * 4 // n
            cmd = [sys.executable, "-m", "harness.cli", "run", str(task), "-q", "--candidates", str(n),
                   "--strategy", "beam:2" if n > 1 else "latest", "--model", f"replay:{replay}",
                   "--max-iterations", str(iterations), "--max-minutes", "120", "--runs-dir", str(runs),
                   "--dumps-dir", str(tmp / f"dumps-{tag}"), "--executor", executor, "--parallel", str(par)] \
                + (["--profile", args.profile] if args.profile else [])
            t0 = time.monotonic()
            try:
                p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=args.case_timeout)
                rc, log = p.returncode, p.stdout + p.stderr
            except subprocess.TimeoutExpired as exc:  # the rate over what it climbed in the time it had
                text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa: E731
                rc, log = "cut", text(exc.stdout) + text(exc.stderr)
            wall = time.monotonic() - t0
            found = list(runs.iterdir()) if runs.is_dir() else []
            count = climbed(found[0]) if found else 0
            if out:
                (out / f"{name}-{tag}.log").write_text(log)
                if found and (found[0] / "report.md").is_file():
                    shutil.copy(found[0] / "report.md", out / f"{name}-{tag}-report.md")
            later = rounds_after_first(found[0]) if found else None  # the rate a long search settles at
            rows.append((name, n, executor + (f" p{par}" if par > 1 else ""), count, wall, 3600 * count / wall, rc,
                         later))
            verdicts = results(found[0]) if found else []
            spent = rung_seconds(verdicts)
            for line in iteration_lines(verdicts):
                print(f"  {line}", flush=True)
            rungs.append((f"{name} {tag}", spent))
            stopped = next((ln for ln in log.splitlines() if ln.startswith("stopped:")), "stopped: (no line)")
            print(f"{name} --candidates {n} --parallel {par} ({executor}): {count} climbed in {wall:.1f} s, rc {rc}; "
                  f"{stopped}", flush=True)  # a run that reached its target early climbed fewer
    names = [r for r in ("precheck", "compile", "run", "correctness", "benchmark", "dumps", "profile", "sections",
                         "roofline")
             if any(r in spent for _, spent in rungs)]
    print("seconds per rung, summed over a case's climbed candidates (where a climb's time goes):")
    print(f"{'case':<20} " + " ".join(f"{r[:8]:>8}" for r in names) + f" {'sum':>8}")
    for case, spent in rungs:
        print(f"{case:<20} " + " ".join(f"{spent.get(r, 0.0):>8.1f}" for r in names) + f" {sum(spent.values()):>8.1f}")
    width = max([10, *(len(r[0]) for r in rows)])
    print("per_hour: climbed over the case's wall; after_r1: climbed after the first round over the run's seconds "
          "from the first round's last verdict to its last (the task's reference timings and caches filled in round 1)")
    print(f"{'task':<{width}} {'cands':>5} {'executor':>8} {'climbed':>7} {'wall_s':>8} {'per_hour':>9} {'rc':>3} "
          f"{'after_r1':>14} {'per_hour':>9}")
    for name, n, executor, count, wall, rate, rc, later in rows:
        tail = f"{later[0]:>5} in {later[1]:>6.1f} {3600 * later[0] / later[1]:>9.0f}" if later else f"{'-':>14} {'-':>9}"
        print(f"{name:<{width}} {n:>5} {executor:>8} {count:>7} {wall:>8.1f} {rate:>9.0f} {rc:>3} {tail}")


if __name__ == "__main__":
    main()
