"""Every problem file of the given KernelBench folders through `load_problem` (no kernel run): a task, or the one-line
refusal, per file, with the seconds it took and the task's notes (test sizes, "no roofline: ...", ...). Runs on a CPU.

    python3 benchmarks/kernelbench_load_all.py KernelBench/level2 KernelBench/level3

Prints one line per problem, then how many became tasks, how many were refused, and how many of the tasks have no
roofline.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("KERNEL_HARNESS_CACHE", "/tmp/kernelbench_load_all")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.kernelbench import load_problem  # noqa: E402
from rungs.core.errors import BadInput  # noqa: E402


def main(folders: list[str]) -> None:
    tasks = refused = unpriced = 0
    for folder in folders:
        files = sorted(Path(folder).glob("*.py"), key=lambda p: (int(p.name.split("_")[0]) if p.name[0].isdigit() else 0, p.name))
        for f in files:
            t = time.time()
            try:
                task = load_problem(f)
                tasks += 1
                unpriced += any(n.startswith("no roofline") for n in task.notes)
                status = f"ok   flops={task.roofline.flops} tests={task.shapes.test} notes={task.notes}"
            except BadInput as e:
                refused += 1
                status = f"BAD  {e}"
            except Exception as e:  # noqa: BLE001 - a harness error: said, and the walk goes on (Ctrl-C stops it)
                refused += 1
                status = f"CRASH {type(e).__name__}: {e} :: {traceback.format_exc().splitlines()[-3:]}"
            print(f"{time.time() - t:6.1f}s {Path(folder).name}/{f.name[:50]:50} {status[:400]}", flush=True)
    print(f"{tasks} tasks ({unpriced} without a roofline), {refused} refused")


if __name__ == "__main__":
    main(sys.argv[1:])
