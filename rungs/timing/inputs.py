"""A bench entry's inputs, made in the process that times them (large inputs would be slow to pass through files).
Two kinds of input maker:
- the task's `make_inputs(shape, dtype, seed, dist)`, drawing on the CPU from a generator of its own: made on the
  CPU, then moved to the device; in the worker, ahead of time in a background thread (`prefetch_inputs`);
- one that also takes `device` (KernelBench problems: get_inputs() under a seed of torch's global generator) draws
  there itself, in the calling thread at the time of use: on a GPU, GBs in milliseconds with no host copy, and never
  beside candidate code that draws from the same global generator (a background thread would interleave with it:
  the worker builds ModelNew, whose layers draw their initial weights, while the prefetch thread runs).
`hollow_spec` describes them without values (the input maker on the meta device, in the parent) and
`hollow_bench_inputs` makes inputs of that description that hold nothing, for a compile capture.
"""
from __future__ import annotations

import inspect
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


def draws_on_device(entry: dict[str, Any]) -> bool:
    """Whether the entry's input maker takes `device` and draws there itself (see the module's docstring)."""
    maker = load_function(entry["inputs"])  # an import that fails raises here
    try:
        return "device" in inspect.signature(maker, follow_wrapped=False).parameters
    except (TypeError, ValueError):  # a callable whose signature cannot be read (a builtin): the plain contract
        return False


def make(entry: dict[str, Any], device: str = "cpu") -> list[Any]:
    """The entry's inputs from its maker: on `device` where the maker draws there itself, else on the CPU."""
    make_inputs = load_function(entry["inputs"])
    args = (dict(entry["shape"]), torch_dtype(entry["dtype"]), entry["seed"], entry["dist"])
    if draws_on_device(entry):
        return list(make_inputs(*args, device=device))
    return list(make_inputs(*args))


def hollow_spec(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """What a bench entry's inputs are, without their values: the input maker runs on the meta device (no values,
    no time) in the harness's own process, so the worker needs no access to the task's folder. Raises TypeError for
    an input that is neither a tensor nor a plain value."""
    import torch

    with torch.device("meta"):
        made = make(entry, "meta")
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
    if draws_on_device(entry):  # in this thread, now; fast on a GPU, so kept for no later phase
        inputs = make(entry, device)
        if device == "cuda":
            torch.cuda.synchronize()
        return inputs, time.perf_counter() - t0
    if _prefetch["thread"] is not None:
        _prefetch["thread"].join()
    made = _prefetch["made"].pop(_key(entry), None)
    if isinstance(made, BaseException):
        raise made
    if made is None:
        threads = torch.get_num_threads()
        torch.set_num_threads(_cpu_threads())
        try:
            made = make(entry)
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

    entries = [e for entry in bench for e in (entry, alt_entry(entry)) if not _draws_on_device_or_fails(e)]
    if not entries:
        return
    torch.set_num_threads(_cpu_threads())

    def work() -> None:
        t0 = time.perf_counter()
        for entry in entries:
            try:
                _prefetch["made"][_key(entry)] = make(entry)
            except BaseException as exc:  # noqa: BLE001 - raised again where the bench phase asks for them
                _prefetch["made"][_key(entry)] = exc
        _prefetch["seconds"] = time.perf_counter() - t0

    _prefetch["thread"] = threading.Thread(target=work, name="bench-inputs", daemon=True)
    _prefetch["thread"].start()


def _draws_on_device_or_fails(entry: dict[str, Any]) -> bool:
    """Not for the prefetch thread: a maker that draws itself (make_bench_inputs calls it), or one that cannot be
    imported (the bench phase raises that). The imports happen here, in the main thread."""
    try:
        return draws_on_device(entry)
    except Exception:  # noqa: BLE001 - raised again where the bench phase asks for the inputs
        return True


def prefetch_seconds() -> float:
    """How long the background thread took to make the prefetched inputs (0.0: none were prefetched)."""
    return float(_prefetch["seconds"])
