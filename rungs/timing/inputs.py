"""A bench entry's inputs, made in the process that times them (large inputs would be slow to pass through files):
by the task's input maker on the CPU, then moved to the device; in the worker, ahead of time in a background thread
(`prefetch_inputs`). `hollow_spec` describes them without values (the input maker on the meta device, in the parent)
and `hollow_bench_inputs` makes inputs of that description that hold nothing, for a compile capture.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable

from rungs.core.imports import import_file
from rungs.timing.fresh import alt_entry


def load_function(ref: str) -> Callable[..., Any]:
    """`/abs/path/file.py:function` -> the function (the task's own, trusted files)."""
    path, _, name = ref.rpartition(":")
    return getattr(import_file(path), name)


def torch_dtype(name: str) -> Any:
    import torch

    return torch.float32 if name == "tf32" else getattr(torch, name)


def _make_on_cpu(entry: dict[str, Any]) -> list[Any]:
    make_inputs = load_function(entry["inputs"])
    return list(make_inputs(dict(entry["shape"]), torch_dtype(entry["dtype"]), entry["seed"], entry["dist"]))


def hollow_spec(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """What a bench entry's inputs are, without their values: the input maker runs on the meta device (no values,
    no time) in the harness's own process, so the worker needs no access to the task's folder. Raises TypeError for
    an input that is neither a tensor nor a plain value."""
    import torch

    with torch.device("meta"):
        made = _make_on_cpu(entry)
    spec: list[dict[str, Any]] = []
    for v in made:
        if isinstance(v, torch.Tensor):
            spec.append({"shape": list(v.shape), "stride": list(v.stride()), "dtype": str(v.dtype).removeprefix("torch.")})
        elif isinstance(v, (bool, int, float, str, type(None))):
            spec.append({"value": v})
        else:
            raise TypeError(f"input of type {type(v).__name__}")
    return spec


def hollow_bench_inputs(spec: list[dict[str, Any]], device: str) -> list[Any]:
    """Inputs as `hollow_spec` describes them, holding nothing in particular: uninitialized memory (on a CPU, pages
    nobody touches cost nothing). For a compile capture, which compiles a launch and never runs it."""
    import torch

    return [torch.empty_strided(s["shape"], s["stride"], dtype=torch_dtype(s["dtype"]), device=device)
            if "shape" in s else s["value"] for s in spec]


def _cpu_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 16))


def make_bench_inputs(entry: dict[str, Any], device: str, keep: bool = False) -> tuple[list[Any], float]:
    """The bench entry's inputs, made here (large inputs would be slow to pass through files), on `device`.
    Returns (inputs, seconds). Uses what prefetch_inputs made, else makes them now on all CPU cores (the
    sandbox starts workers with one). `keep`: the host copy stays for the next phase (autotuning, then bench)."""
    import torch

    t0 = time.perf_counter()
    if _prefetch["thread"] is not None:
        _prefetch["thread"].join()
    made = _prefetch["made"].pop(_key(entry), None)
    if isinstance(made, BaseException):
        raise made
    if made is None:
        threads = torch.get_num_threads()
        torch.set_num_threads(_cpu_threads())
        try:
            made = _make_on_cpu(entry)
        finally:
            torch.set_num_threads(threads)
    if keep:
        _prefetch["made"][_key(entry)] = made
    inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in made]
    if device == "cuda":
        torch.cuda.synchronize()
    return inputs, time.perf_counter() - t0


_prefetch: dict[str, Any] = {"thread": None, "made": {}, "seconds": 0.0}


def _key(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True)


def prefetch_inputs(bench: list[dict[str, Any]]) -> None:
    """Start making the bench inputs on the CPU in a background thread, so that it overlaps the compile and run
    phases: the input makers draw from a seeded CPU generator, one core, seconds for a GiB."""
    import torch

    entries = [e for entry in bench for e in (entry, alt_entry(entry))]
    if not entries:
        return
    torch.set_num_threads(_cpu_threads())

    def work() -> None:
        t0 = time.perf_counter()
        for entry in entries:
            try:
                _prefetch["made"][_key(entry)] = _make_on_cpu(entry)
            except BaseException as exc:  # noqa: BLE001 - raised again where the bench phase asks for them
                _prefetch["made"][_key(entry)] = exc
        _prefetch["seconds"] = time.perf_counter() - t0

    for entry in entries:  # imports stay in the main thread
        try:
            load_function(entry["inputs"])
        except Exception:  # noqa: BLE001 - the bench phase raises it
            return
    _prefetch["thread"] = threading.Thread(target=work, name="bench-inputs", daemon=True)
    _prefetch["thread"].start()


def prefetch_seconds() -> float:
    """How long the background thread took to make the prefetched inputs (0.0: none were prefetched)."""
    return float(_prefetch["seconds"])
