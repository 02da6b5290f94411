"""The trusted baseline process: `python -m rungs.ladder.baseline JOB_DIR`.

Times the task's reference in eager torch at the task dtype, and through torch.compile where that works, on
the bench shapes, with the same timing code as candidates (rungs/timing/); and measures this GPU's ceilings
(rungs/ladder/roofline.py) when they are not cached yet. It runs apart from the candidate's worker because code the
candidate ran could have patched torch in that process. rungs/ladder/benchmark.py starts it once per run and caches
what it writes (JOB_DIR/baseline.json).
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Iterator

from rungs.timing import gpu_lock
from rungs.timing.devices import device_for
from rungs.timing.inputs import load_function, make_bench_inputs
from rungs.timing.measure import TimingConfig, measure
from rungs.core.atomic import atomic_write


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _time(fn: Any, inputs: list[Any], dev: Any, cfg: TimingConfig) -> dict[str, Any]:
    import torch

    try:
        with torch.no_grad():
            result = measure(fn, inputs, dev, cfg)
    except Exception as exc:  # noqa: BLE001 - a baseline that cannot run is reported, not fatal
        try:
            dev.sync()
        except Exception:  # noqa: BLE001 - a sticky CUDA error: the next timing reports it too
            pass
        return {"error": _first_line(exc), "traceback": traceback.format_exc()[-2000:]}
    result.pop("samples_us", None)
    return result


def _warm(fn: Any, inputs: list[Any], dev: Any) -> None:
    """The first call, outside the GPU's timing lock: torch.compile's inductor build happens here (seconds of CPU);
    one untimed call beside another process's timing costs that timing at most one sample of its median. What
    fails here fails again in _time, which reports it."""
    import torch

    try:
        with torch.no_grad():
            fn(*inputs)
        dev.sync()
    except Exception:  # noqa: BLE001 - reported by _time
        pass


def run(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    t0 = time.perf_counter()
    cfg = TimingConfig.from_dict(job.get("timing"))
    dev = device_for(job["device"], cfg)
    out: dict[str, Any] = {"gpu": dev.name, "torch": torch.__version__, "cases": [], "gpu_wait_s": 0.0}

    def alone() -> Any:  # the GPU's timing lock (None: no GPU, no lock), its waits added up
        return _waited(gpu_lock.held_for(job.get("gpu_lock")), out)

    if job["device"] == "cuda" and job.get("ceilings"):
        from rungs.ladder import roofline

        try:
            t = time.perf_counter()
            with alone():
                out["ceilings"] = str(roofline.ensure_ceilings(dev))
            out["ceilings_s"] = time.perf_counter() - t
        except Exception as exc:  # noqa: BLE001 - the roofline falls back to the datasheet, labelled
            out["ceilings_error"] = _first_line(exc)
    reference = load_function(job["reference"])
    compiled = None
    compile_error = None
    if job.get("compile", True):
        try:
            compiled = torch.compile(reference, dynamic=False)
        except Exception as exc:  # noqa: BLE001
            compile_error = _first_line(exc)
    for entry in job["bench"]:
        inputs, inputs_s = make_bench_inputs(entry, job["device"])
        _warm(reference, inputs, dev)
        with alone():
            eager = _time(reference, inputs, dev, cfg)
        case: dict[str, Any] = {"id": entry["id"], "shape": entry["shape"], "dtype": entry["dtype"],
                                "inputs_s": inputs_s, "eager": eager}
        if compiled is not None:
            _warm(compiled, inputs, dev)
            with alone():
                case["compile"] = _time(compiled, inputs, dev, cfg)
        else:
            case["compile"] = {"error": compile_error or "torch.compile not asked for"}
        out["cases"].append(case)
        del inputs
        dev.release()
    out["seconds"] = time.perf_counter() - t0
    return out


@contextlib.contextmanager
def _waited(lock: Any, out: dict[str, Any]) -> Iterator[None]:
    with lock as info:
        out["gpu_wait_s"] = round(out["gpu_wait_s"] + float(info.get("wait_s", 0.0)), 3)
        if info.get("note"):
            out["gpu_lock_note"] = info["note"]
        yield


def main(job_dir: Path) -> int:
    job = json.loads((job_dir / "job.json").read_text())
    result = run(job)
    atomic_write(job_dir / "baseline.json", json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    from rungs.core.exit import exit_now

    exit_now(main(Path(sys.argv[1])))
