"""GPU verification of an export: the C test program on inputs the harness wrote, judged and timed.

Per exported shape: the task's input maker draws the inputs (seed 0, the first distribution), written as raw bytes;
the test program runs the C entry once, writes the outputs, then times calls with CUDA events, as the harness does
(an L2 flush and a spin before each call, a wait after it, the median; harness/export/flush.py) and back to back.
The Python entry is timed before the C program and again after it (`harness_after_us`). The outputs are
compared with the float64 reference by the correctness rung's metrics and limits (rungs/ladder/metrics.py), and the
Python entry is timed by the benchmark rung's own timing (rungs/timing/measure.py) on the same inputs, for the ratio.

The Python entry runs in this process, not in the worker's sandbox: export only kernels you trust (a run's
verified best iteration).
"""
from __future__ import annotations

import json
import subprocess
from typing import Any

from rungs.core.errors import HarnessError
from harness.export import Exported
from harness.export.capture import TORCH_DTYPES
from rungs.core.spec import TaskSpec, load_callable

C_SECONDS = 0.3
"""Device time the C timing loop aims at (its repetitions follow from the harness's time per call)."""


def verify_export(done: Exported, task: TaskSpec) -> list[dict[str, Any]]:
    import torch

    from rungs.ladder import metrics as m
    from rungs.ladder.bench_reference import _upcast
    from rungs.timing.measure import TimingConfig, measure
    from rungs.timing.devices import device_for
    from rungs.worker.candidate import load_candidate

    if not torch.cuda.is_available():
        raise HarnessError("--verify needs a GPU: on this machine the export was only built and its symbols checked")
    from triton.backends.nvidia.driver import libcuda_dirs

    from harness.export import cuda_root

    # the driver's own library: a machine with a driver but no toolkit has libcuda.so.1 and no libcuda.so to link
    link = f"LDLIBS=-L{libcuda_dirs()[0]} -l:libcuda.so.1"
    proc = subprocess.run(["make", f"CUDA={cuda_root()}", link, "test"], cwd=done.out_dir, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise HarnessError(f"make test failed in {done.out_dir}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    test = done.out_dir / f"{done.fn}_test"
    make = load_callable(task, task.inputs, "inputs")
    reference = load_callable(task, task.reference, "reference")
    dtype = task.dtypes[0]
    limits = m.thresholds(dtype, task.tolerances[dtype].model_dump() if dtype in task.tolerances else None)
    entry = load_candidate(str(done.kernel.resolve()), task.entry)
    dev = device_for("cuda", TimingConfig())
    rows = []
    for variant in done.capture["variants"]:
        shape = variant["shape"]
        inputs = list(make(shape, getattr(torch, TORCH_DTYPES[dtype]), 0, task.distributions[0]))
        files = []
        for i, x in enumerate(inputs):
            path = done.out_dir / f"verify-in{i}.bin"
            path.write_bytes(x.contiguous().view(torch.uint8).numpy().tobytes())
            files.append(str(path))
        gpu_inputs = [x.cuda() for x in inputs]
        with torch.no_grad():
            harness = measure(entry, gpu_inputs, dev, TimingConfig())
        harness_us = float(harness["runtime_us"])
        reps = max(10, min(5000, int(C_SECONDS * 1e6 / max(harness_us, 1.0))))
        outs = []
        for j, o in enumerate(variant["outputs"]):
            outs += [str(done.out_dir / f"verify-out{j}.bin"), str(o["bytes"])]
        sizes = [str(v) for v in shape.values() if isinstance(v, int) and not isinstance(v, bool)]
        run = subprocess.run([str(test), str(reps), *sizes, *files, *outs], capture_output=True, text=True,
                             timeout=600)
        if run.returncode != 0:
            raise HarnessError(f"{test.name} failed at {shape}: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
        times = dict(line.split()[:2] for line in run.stdout.splitlines() if line.startswith("time_us"))
        c_us, back_to_back = float(times["time_us"]), float(times["time_us_back_to_back"])
        with torch.no_grad():  # again after the C program: a clock or power state that moved between the two shows
            after_us = float(measure(entry, gpu_inputs, dev, TimingConfig())["runtime_us"])
        refs = reference(*[_upcast(v, torch.float64, "cuda") for v in inputs])
        refs = list(refs) if isinstance(refs, (tuple, list)) else [refs]
        worst, broken = 0.0, []
        for j, o in enumerate(variant["outputs"]):
            raw = (done.out_dir / f"verify-out{j}.bin").read_bytes()
            got = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(getattr(torch, o["dtype"]))
            metrics, _, bad = m.assess(got.reshape(o["shape"]).cuda(), refs[j], dtype, limits)
            worst = max(worst, metrics.get("max_abs_scaled", 0.0))
            broken += [f"{task.output_name(j, len(refs))}: {b}" for b in bad]
        rows.append({"kernel": f"{task.name}:{task.entry}", "shape": ", ".join(f"{k}={v}" for k, v in shape.items()),
                     "max_abs_scaled": worst, "c_us": c_us, "harness_us": harness_us, "ratio": c_us / harness_us,
                     "c_back_to_back_us": back_to_back, "harness_after_us": after_us,
                     "ok": not broken, "broken": "; ".join(broken)})
        del gpu_inputs
        dev.release()
    (done.out_dir / "verify.json").write_text(json.dumps(rows, indent=2))
    return rows
