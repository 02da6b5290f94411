"""The instrumented build of the sections step: `python -m rungs.worker.sections_target SECTIONS_JOB.json`.

Runs in the sandbox like the worker (scrubbed environment, only its folder writable). Turns the DSL's
instrumentation on before the candidate is imported, so its kernels compile with the region records in, calls the
entry once at the bench shape the job names, and writes the records' summary (and the trace's file name) to
sections.json beside the job file (or {"error": ...}: one line for the step). Keeps to the worker's light imports.
"""
from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from rungs.core.atomic import atomic_write
from rungs.worker.job import SECTIONS_FILE


def _device() -> dict[str, Any]:
    """The SM count and the SM clock's rated rate (MHz), for the step's time accounting."""
    import torch

    out: dict[str, Any] = {"sms": torch.cuda.get_device_properties(0).multi_processor_count}
    try:
        from cuda.bindings import driver

        err, khz = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0)
        if err == driver.CUresult.CUDA_SUCCESS and khz > 0:
            out["clock_mhz"] = khz / 1000.0
    except Exception:  # noqa: BLE001 - no cuda-bindings: no accounting line
        return out
    return out


def main(job_path: Path) -> int:
    job = json.loads(job_path.read_text())
    folder = job_path.parent
    result_path = folder / SECTIONS_FILE
    try:
        import torch

        from rungs.timing.inputs import make_bench_inputs
        from rungs.worker.candidate import judged_entry

        module = importlib.import_module(job["sections_module"])  # the backend's: rungs/backends/<dsl>_sections
        stem = folder / "trace"
        with module.instrumented(stem):
            fn = judged_entry(job, folder)  # the autotuned point that was judged, where a space was declared
            inputs, _ = make_bench_inputs(job["bench"], "cuda")
            with torch.no_grad():
                fn(*inputs)
            torch.cuda.synchronize()
        result = {**module.collect(stem), **_device()}  # summarized here: millions of records would not cross
    except Exception as exc:  # noqa: BLE001 - the candidate's or the profiler's failure is the step's one line
        frames = traceback.format_exception_only(type(exc), exc)
        result = {"error": f"the instrumented build failed: {frames[-1].strip()[:400]}"}
    atomic_write(result_path, json.dumps(result))
    print("sections_target: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
