"""Where a candidate's time goes on the GPU, as `harness run` sees it (pre-started worker, baselines cached).

Climbs the ladder three times on the softmax demo kernel with the worker kept warm, and prints each rung's wall
time, the worker's phases and the run phase's per-case seconds. GPU machine only.
    python3 benchmarks/overhead_probe.py
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rungs.core.spec import load_task  # noqa: E402
from rungs.sandbox.pool import keep_warm  # noqa: E402
from rungs.ladder.ladder import Ladder  # noqa: E402


def main() -> None:
    task = load_task(ROOT / "tasks" / "softmax.yaml")
    kernel = ROOT / "tasks" / "demos" / "softmax_4_tuned.py"
    keep_warm(True)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(4):
            os.environ["HARNESS_BENCH_PREFETCH"] = "0" if i == 3 else "1"
            time.sleep(10.0)  # the model "thinking": the next worker (about 7 s to start on the H200) starts meanwhile
            t0 = time.monotonic()
            ladder = Ladder(task=task, kernel=kernel, work_dir=Path(tmp) / f"w{i}", keep_work=True,
                            baseline_cache=Path(tmp) / "baselines")
            verdict = ladder.climb()
            wall = time.monotonic() - t0
            bench = verdict.rung("benchmark")
            run = json.loads((ladder.job_dir / "phase-run.json").read_text())
            per_case = [round(c["seconds"], 3) for c in run["cases"]]
            print(f"climb {i} (prefetch {os.environ['HARNESS_BENCH_PREFETCH']}): {verdict.summary}; wall {wall:.2f} s; "
                  + ", ".join(f"{r.name} {r.seconds:.2f}" for r in verdict.rungs))
            print(f"  overhead_s {bench.metrics.get('overhead_s') if bench else None}; breakdown "
                  f"{bench.metrics.get('breakdown_s') if bench else None}")
            print(f"  run phase wall {run.get('wall_s', 0):.2f} s; per case {per_case}")


if __name__ == "__main__":
    main()
