"""Autotuning on a GPU (not a test; run on the H200): declared config spaces through the whole ladder.

    python3 benchmarks/gpu_autotune_check.py [--only gemm,softmax,wrong] [--autotune-s 60] [--out DIR]

Runs `python -m harness.cli check TASK KERNEL --json` (the real CLI, in a subprocess, from the repo root) on:
- gemm: tasks/gemm.yaml with tasks/demos/gemm_5_autotune.py (CONFIGS, 10 configs): expect pass, with the table;
- softmax: tasks/softmax.yaml with tests/kernels/autotune_triton_softmax.py (@triton.autotune, 8 configs, pinned
  by the harness: Triton's own timing loop must not run): expect pass, with the table;
- wrong: tasks/softmax.yaml with tests/kernels/autotune_wrong_config_softmax.py (one config reads only the first
  block: the fastest and wrong): expect a correctness failure that names that config.
Prints a line per check (verdict, expected or not, runtime, the chosen config), then every autotune table last.
Writes gpu_autotune_check.json (the verdicts) and gpu_autotune_check.log to --out (default $OUT, else nothing).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHECKS = {
    "gemm": ("tasks/gemm.yaml", "tasks/demos/gemm_5_autotune.py", "pass"),
    "softmax": ("tasks/softmax.yaml", "tests/kernels/autotune_triton_softmax.py", "pass"),
    "wrong": ("tasks/softmax.yaml", "tests/kernels/autotune_wrong_config_softmax.py", "fail:correctness"),
}
LOG: list[str] = []


def say(text: str) -> None:
    LOG.append(text)
    print(text, flush=True)


def run_check(name: str, autotune_s: float, timeout_s: float) -> dict[str, Any]:
    task, kernel, expect = CHECKS[name]
    cmd = [sys.executable, "-m", "harness.cli", "check", task, kernel, "--json", "--autotune-s", str(autotune_s)]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"name": name, "expect": expect, "error": f"timed out after {timeout_s:.0f} s", "seconds": timeout_s}
    seconds = time.monotonic() - t0
    try:
        verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"name": name, "expect": expect, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}",
                "seconds": seconds}
    return {"name": name, "expect": expect, "verdict": verdict, "seconds": seconds, "stderr": proc.stderr[-2000:]}


def summary(result: dict[str, Any]) -> tuple[str, str | None]:
    """One line for the check, and its autotune table (None where the benchmark has none)."""
    name, expect = result["name"], result["expect"]
    if "error" in result:
        return f"{name:<8} ERROR {result['error'][:300]}", None
    v = result["verdict"]
    got = v["verdict"] + (f":{v['failed_rung']}" if v.get("failed_rung") else "")
    rungs = {r["name"]: r for r in v["rungs"]}
    bench = rungs.get("benchmark", {})
    tuned = (bench.get("metrics") or {}).get("autotune") or {}
    runtime = (bench.get("metrics") or {}).get("runtime_us")
    chosen = f"#{tuned['winner']} {tuned['label']}" if tuned else "-"
    ok = "as expected" if got == expect else f"UNEXPECTED (wanted {expect})"
    line = (f"{name:<8} {got:<18} {ok:<28} runtime {runtime if runtime is not None else '-':>10} us  chosen {chosen}"
            f"  ({result['seconds']:.0f} s)")
    if got.startswith("fail"):
        line += f"\n         {v['failed_rung']}: {rungs[v['failed_rung']]['message'][:400]}"
    compiled = rungs.get("compile", {}).get("message", "")
    line += f"\n         compile: {compiled[-160:]}"
    if tuned:
        line += f"\n         benchmark: {bench.get('message', '')[-300:]}"
    return line, tuned.get("table")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CHECKS), help="comma-separated subset of: " + ", ".join(CHECKS))
    ap.add_argument("--autotune-s", type=float, default=60.0)
    ap.add_argument("--timeout-s", type=float, default=560.0, help="per check")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"unknown check(s) {', '.join(unknown)}: expected some of {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    results, tables = [], []
    for name in names:
        say(f"== {name}: harness check {' '.join(CHECKS[name][:2])}")
        result = run_check(name, args.autotune_s, args.timeout_s)
        results.append(result)
        line, table = summary(result)
        say(line)
        if table:
            tables.append((name, table))
    say("\n== autotune tables (* = chosen: the build judged and timed)")
    for name, table in tables:
        say(f"-- {name}\n{table}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_autotune_check.json").write_text(json.dumps(results, indent=1, default=str))
        (out / "gpu_autotune_check.log").write_text("\n".join(LOG) + "\n")
    expected = all("verdict" in r and (r["verdict"]["verdict"] + (f":{r['verdict']['failed_rung']}"
                                                                  if r["verdict"].get("failed_rung") else ""))
                   == r["expect"] for r in results)
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
