"""What Nsight Compute runs for the profile rung: `python -m rungs.profile_target PROFILE_JOB.json`.

Imports the candidate, makes the first bench shape's inputs, and calls the entry twice: once outside the
profiled range (it compiles, autotunes and warms up there), then once between cudaProfilerStart and
cudaProfilerStop, which ncu (`--profile-from-start off`) limits itself to. So the profile holds one real call's
launches, whatever the candidate does on its first call. Runs in the sandbox's scrubbed environment, like the
worker, and keeps to the worker's light imports.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(job_path: Path) -> int:
    job = json.loads(job_path.read_text())
    import torch

    from rungs import autotune
    from rungs.timing import make_bench_inputs
    from rungs.worker import load_candidate

    entry = load_candidate(job["kernel"], job["entry"], job, job_path.parent)
    autotune.choose(int(job.get("config", 0)))  # the point the autotune phase chose: the build that was judged
    autotune.freeze()
    fn = autotune.bound(entry)
    inputs, _ = make_bench_inputs(job["bench"], "cuda")
    with torch.no_grad():
        fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        fn(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print("profile_target: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
