"""The dumps and profile rungs on demo kernels, on the GPU machine: prints each kernel's resource summary and its
Nsight Compute summary, and keeps profile.csv per demo.

    PYTHONPATH=. python benchmarks/profile_demos.py [--out DIR] [task.yaml:kernel.py ...]

Runs the ladder's rungs in order but leaves out benchmark and roofline (their baselines take minutes), so a demo
takes about as long as its worker plus one ncu run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMOS = ["tasks/softmax.yaml:tasks/demos/softmax_4_tuned.py", "tasks/gemm.yaml:tasks/demos/gemm_4_grouped.py"]
RUNGS = ("precheck", "compile", "run", "correctness", "dumps", "profile")


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from rungs.core.spec import load_task
    from rungs.ladder.ladder import Ladder

    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="*", default=DEMOS)
    ap.add_argument("--out", type=Path, default=None, help="dumps go to OUT/<kernel>/ (default: a temporary folder)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="profile-demos-"))
    out = args.out or tmp / "dumps"
    for pair in args.pairs:
        task_file, _, kernel = pair.partition(":")
        kernel_path = ROOT / kernel
        ladder = Ladder(task=load_task(ROOT / task_file), kernel=kernel_path, work_dir=tmp / kernel_path.stem,
                        dump_dir=out / kernel_path.stem, seeds=1, profile_cache=tmp / "cache")
        print(f"==== {kernel} on {ladder.device}", flush=True)
        for name in RUNGS:
            t0 = time.monotonic()
            r = getattr(ladder, f"rung_{name}")()
            ladder.results.append(r)
            print(f"{r.status:>4} {name:<12} {time.monotonic() - t0:6.1f} s  {r.message[:300]}", flush=True)
            if r.status == "fail":
                print(r.details[-2000:])
                break
        for name in ("dumps", "profile"):
            r = next((x for x in ladder.results if x.name == name), None)
            if r is not None and r.details:
                print(f"---- {name} details\n{r.details}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
