"""What a climb costs on a CPU (no GPU): the machine's CPU-seconds (from /proc/stat, so the sandboxed workers count)
and the wall time of the same candidates climbed with the compile and run phases in one zygote's forks (the default,
rungs/worker/zygote.py) and with a fresh worker per phase (KERNEL_HARNESS_ZYGOTE=0), each in a process of its own.

    python3 benchmarks/cpu_climbs.py [--rounds 2]

Run it on an idle machine: /proc/stat counts every process.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ["probe_raises.py", "honest_shape_cache.py", "id_cache.py", "inplace_input.py"]
"""From tests/adversarial/: two that fail at correctness or run, two that pass; the softmax task at its small shapes."""
CLIMBS = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_adversarial import ADV, climb, small
for k in {kernels!r} * {rounds}:
    with tempfile.TemporaryDirectory() as d:
        v = climb(small("softmax"), ADV / k, Path(d))
        forked = "fresh fork of the zygote" in v.rung("run").metrics.get("sandbox", "")
        print(k, v.verdict, v.failed_rung or "", "forked" if forked else "", flush=True)
"""


def busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(f) for i, f in enumerate(fields) if i not in (3, 4))  # all but idle and iowait


def measure(zygote: bool, rounds: int) -> tuple[float, float, int]:
    env = {**os.environ, "KERNEL_HARNESS_ZYGOTE": "1" if zygote else "0", "PYTHONPATH": str(ROOT)}
    code = CLIMBS.format(tests=str(ROOT / "tests"), kernels=KERNELS, rounds=rounds)
    ticks, t0 = busy_ticks(), time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    wall, cpu = time.monotonic() - t0, (busy_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
    forks = sum(line.endswith(" forked") for line in out.stdout.splitlines())
    return cpu, wall, forks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="times each of the four candidates is climbed")
    args = parser.parse_args()
    n = len(KERNELS) * args.rounds
    rows = [("a worker per phase", *measure(False, args.rounds)), ("one zygote a climb", *measure(True, args.rounds))]
    print(f"{n} climbs (softmax, small shapes), {os.cpu_count()} cores")
    print(f"{'phases run in':22s} {'CPU-s':>8s} {'CPU-s/climb':>12s} {'wall s':>8s} {'run phases forked':>18s}")
    for name, cpu, wall, forks in rows:
        print(f"{name:22s} {cpu:8.1f} {cpu / n:12.2f} {wall:8.1f} {forks:>18d}")


if __name__ == "__main__":
    main()
