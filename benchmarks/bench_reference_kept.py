"""Seconds of a candidate's bench-shape reference check: in a process started for it, and in the one kept from the
task's previous candidate (rungs/ladder/reference_server.py). Runs anywhere (on a CPU: the Triton interpreter
times the softmax demo at a small bench shape, the reference runs on the CPU).

    python3 benchmarks/bench_reference_kept.py [--rounds 4] [--rows 64 --cols 4096]

On the GPU the same split shows in `harness run`'s per-candidate breakdown (`bench_reference`) and in
`python3 benchmarks/overhead_probe.py` (its first climb starts the process, the others find it waiting).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rungs.core.spec import load_task  # noqa: E402
from rungs.ladder import reference_server  # noqa: E402
from rungs.ladder.benchmark import bench_reference  # noqa: E402
from rungs.ladder.cases import make_cases, write_inputs  # noqa: E402
from rungs.sandbox import pool  # noqa: E402
from rungs.worker.job import Job  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--cols", type=int, default=4096)
    args = ap.parse_args()
    task = load_task(ROOT / "tasks" / "softmax.yaml")
    shape = {"M": args.rows, "N": args.cols}
    task = task.model_copy(update={"shapes": task.shapes.model_copy(update={"bench": [shape]})})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = make_cases(task, [{"M": 16, "N": 64}], 1, with_reference=True, base_seed=3)
        job = Job(kernel=str(ROOT / "tasks" / "demos" / "softmax_3_rowwise.py"), entry="kernel", dsl="triton",
                  device="cpu", cases=write_inputs(cases, work), phases=["run", "bench"],
                  bench=[{"id": "b00", "shape": shape, "dtype": "float32", "seed": 11, "dist": "normal",
                          "inputs": f"{ROOT / 'tasks' / 'softmax_ref.py'}:make_inputs"}],
                  timing={"cap_s": 30.0, "min_reps": 40, "max_reps": 40, "warmup_ms": 0.001, "graph_under_us": 0.0})
        outcome = pool.run_worker(work, job, 600, interpret=True)
        bench = outcome.phases.get("bench") or {}
        if not bench.get("ok"):
            sys.exit(f"the worker's bench phase failed: {bench.get('error') or outcome.phases}")
        [case] = bench["cases"]
        climb = SimpleNamespace(task=task, job=job, job_dir=work, baseline_cache=work / "cache", work_dir=work,
                                pool=None)
        pool.keep_warm(True)  # a run's loop: the process waits for the next candidate
        rows = []
        for i in range(args.rounds):
            t0 = time.monotonic()
            results, error = bench_reference(climb, [case], {})
            if error:
                sys.exit(error)
            r = results[case["id"]]
            rows.append((i + 1, "started" if i == 0 else "kept", time.monotonic() - t0, r["reference"],
                         len(r["picks_judged"]), "pass" if not r["broken"] else r["broken"][0][:40]))
        reference_server.close_all()
    print(f"softmax {args.rows} x {args.cols} float32 on the CPU, bench-shape reference per candidate")
    print(f"{'candidate':>9} {'process':>8} {'seconds':>8} {'reference':>10} {'picks':>6}  verdict")
    for n, how, s, ref, picks, verdict in rows:
        print(f"{n:>9} {how:>8} {s:>8.2f} {ref:>10} {picks:>6}  {verdict}")


if __name__ == "__main__":
    main()
