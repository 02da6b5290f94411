"""Each task's demo kernels through the whole ladder on the GPU machine (not a test).

For every tasks/<task>.yaml and each of its demo kernels tasks/demos/<task>_<n>_*.py: the verdict, runtime on the
bench shapes, GB/s, TFLOP/s, the roofline fraction, and the eager and torch.compile baselines.

    python3 benchmarks/demo_speeds.py [--out DIR] [--tasks softmax,gemm] [--budget-s 240] [--baseline-cache DIR]

Writes demo_speeds.json (every verdict in full) and demo_speeds.log to --out (default $OUT), and prints a short
table last. Ladders not started within --budget-s are listed as not run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def demos_of(yaml: Path) -> list[Path]:
    return sorted((ROOT / "tasks" / "demos").glob(f"{yaml.stem}_[0-9]*.py"))


def row_of(task_name: str, demo: Path, verdict: Any, wall: float) -> dict[str, Any]:
    bench = verdict.rung("benchmark")
    roof = verdict.rung("roofline")
    b = bench.metrics if bench and bench.status == "ok" else {}
    r = roof.metrics if roof else {}
    return {"task": task_name, "demo": demo.stem, "verdict": verdict.summary, "wall_s": round(wall, 2),
            "runtime_us": b.get("runtime_us"), "iqr_us": b.get("iqr_us"), "gbps": b.get("gbps"),
            "tflops": b.get("tflops"), "roofline_fraction": r.get("roofline_fraction"),
            "target_reached": r.get("target_reached"), "eager_us": b.get("eager_us"),
            "compile_us": b.get("compile_us"), "speedup_vs_eager": b.get("speedup_vs_eager"),
            "speedup_vs_compile": b.get("speedup_vs_compile"), "overhead_s": b.get("overhead_s"),
            "modes": sorted({s["mode"] for s in b.get("per_shape", [])})}


def table(rows: list[dict[str, Any]]) -> list[str]:
    def f(v: Any, spec: str) -> str:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return format(v, spec)
        return "-".rjust(int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0))

    lines = [f"{'demo':<26} {'verdict':<22} {'runtime_us':>10} {'GB/s':>7} {'TFLOP/s':>8} {'roofline':>8} "
             f"{'eager_us':>9} {'compile_us':>10} {'x eager':>7} {'x comp':>7}"]
    for r in rows:
        verdict = r["verdict"] if r["verdict"] == "pass" else r["verdict"].split(":")[0]
        lines.append(f"{r['demo'][:26]:<26} {verdict[:22]:<22} {f(r['runtime_us'], '10.1f')} {f(r['gbps'], '7.0f')} "
                     f"{f(r['tflops'], '8.1f')} {f(r['roofline_fraction'], '8.3f')} {f(r['eager_us'], '9.1f')} "
                     f"{f(r['compile_us'], '10.1f')} {f(r['speedup_vs_eager'], '7.2f')} "
                     f"{f(r['speedup_vs_compile'], '7.2f')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench-out"))
    parser.add_argument("--tasks", default="", help="comma-separated task file stems (default: all)")
    parser.add_argument("--budget-s", type=float, default=0.0, help="start no ladder after this many seconds (0: none)")
    parser.add_argument("--baseline-cache", default=None)
    parser.add_argument("--seeds", type=int, default=1, help="correctness seeds per test shape")
    args = parser.parse_args()

    from rungs.core.errors import HarnessError
    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.baseline_cache) if args.baseline_cache else Path(tempfile.mkdtemp()) / "baselines"
    wanted = {t for t in args.tasks.split(",") if t}
    log_path = out / "demo_speeds.log"
    log_path.write_text("")

    def log(line: str) -> None:  # appended as it goes: a run killed at its time limit leaves its log
        print(line, flush=True)
        with open(log_path, "a") as f:
            f.write(line + "\n")

    rows: list[dict[str, Any]] = []
    full: list[dict[str, Any]] = []
    t0 = time.monotonic()
    for yaml in sorted((ROOT / "tasks").glob("*.yaml")):
        if wanted and yaml.stem not in wanted:
            continue
        try:
            task = load_task(yaml)
        except HarnessError as exc:
            log(f"{yaml.name}: not loaded: {exc}")
            continue
        for demo in demos_of(yaml):
            if args.budget_s and time.monotonic() - t0 > args.budget_s:
                log(f"{task.name}/{demo.stem}: not run (budget of {args.budget_s:.0f} s spent)")
                rows.append({"task": task.name, "demo": demo.stem, "verdict": "not run (budget)",
                             **{k: None for k in ("runtime_us", "gbps", "tflops", "roofline_fraction", "eager_us",
                                                  "compile_us", "speedup_vs_eager", "speedup_vs_compile")}})
                continue
            start = time.monotonic()
            with tempfile.TemporaryDirectory() as work:
                verdict = check(task, demo, Path(work), baseline_cache=cache, seeds=args.seeds)
            row = row_of(task.name, demo, verdict, time.monotonic() - start)
            rows.append(row)
            full.append({"task": task.name, "demo": demo.stem, "verdict": verdict.model_dump()})
            log(f"{task.name}/{demo.stem}: {verdict.summary} ({row['wall_s']:.1f} s)")
            for r in verdict.rungs:
                if r.name in ("benchmark", "roofline") and r.message:
                    log(f"    {r.name}: {r.message}")
    (out / "demo_speeds.json").write_text(json.dumps({"rows": rows, "verdicts": full,
                                                      "seconds": time.monotonic() - t0}, indent=1, default=str))
    log("")
    log("== demo speeds (bench shapes; runtime = sum of per-shape medians) ==")
    for ln in table(rows):
        log(ln)
    return 0


if __name__ == "__main__":
    sys.exit(main())
