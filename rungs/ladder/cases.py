"""Test cases: inputs made fresh per shape, seed and distribution, and their float64 references.

References are computed here, in the parent, from inputs upcast to float64: the candidate's process
never holds them. They run with TF32 off (rungs/core/precision.py), should a reference compute in float32 on a GPU.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from rungs.core.errors import BadInput
from rungs.core.spec import TaskSpec, load_callable
from rungs.core.precision import ieee_float32
from rungs.core.fmt import pairs
from rungs.worker.job import OUTPUT_BYTES_FACTOR

TORCH_DTYPES = {"float32": torch.float32, "tf32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


@dataclass
class Case:
    id: str
    shape: dict[str, Any]
    dtype: str
    seed: int
    dist: str
    first_of_shape: bool
    inputs: tuple[Any, ...]
    reference: list[torch.Tensor] | None = None

    def label(self) -> str:
        dims = pairs(self.shape)
        return f"{dims} {self.dtype} seed={self.seed} {self.dist}"


def upcast(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(torch.float64)
    return value


def plan(task: TaskSpec, shapes: list[dict[str, Any]], seeds: int, base_seed: int = 0) -> list[tuple[dict, str, int, str]]:
    """(shape, dtype, seed, distribution) for each case. Seed 0 of each shape uses the first distribution;
    the others rotate through the rest, so every distribution meets several shapes. A long shape (task.shapes.long)
    gets one seed: it tests lengths, and its cases cost the interpreter the most."""
    out = []
    dists = task.distributions
    for dtype in task.dtypes:
        for si, shape in enumerate(shapes):
            for k in range(1 if shape in task.shapes.long else seeds):
                dist = dists[0] if k == 0 else dists[(si + k) % len(dists)]
                out.append((shape, dtype, base_seed + 1000 * si + k, dist))
    return out


def task_call(task: TaskSpec, key: str, fn: Callable[..., Any], shape: dict[str, Any], *args: Any) -> Any:
    """Call the task's input maker or reference; what it raises is the task author's to fix (exit 2), so the
    error names the shape's line in the task file and the line of the task's own code that raised."""
    try:
        with torch.no_grad():
            return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure of task code is a bad task, not a harness bug
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).parent == task.dir]
        at = f" at {Path(frames[-1].filename).name} line {frames[-1].lineno}" if frames else ""
        raise BadInput(f"{task.where(*task.shape_loc(shape))}: {key} {getattr(task, key)} raised "
                       f"{type(exc).__name__}: {exc}{at}, for shape {shape}") from None


def make_cases(task: TaskSpec, shapes: list[dict[str, Any]], seeds: int, with_reference: bool,
               base_seed: int = 0) -> list[Case]:
    make_inputs = load_callable(task, task.inputs, "inputs")
    reference = load_callable(task, task.reference, "reference")
    cases = []
    seen: set[tuple] = set()
    for n, (shape, dtype, seed, dist) in enumerate(plan(task, shapes, seeds, base_seed)):
        inputs = task_call(task, "inputs", make_inputs, shape, dict(shape), TORCH_DTYPES[dtype], seed, dist)
        if not isinstance(inputs, (tuple, list)):
            raise BadInput(f"{task.where('inputs')}: {task.inputs} returned a {type(inputs).__name__}, expected a "
                           f"tuple of inputs, for shape {shape}")
        inputs = tuple(inputs)
        key = (tuple(sorted(shape.items())), dtype)
        case = Case(id=f"c{n:03d}", shape=dict(shape), dtype=dtype, seed=seed, dist=dist,
                    # the determinism re-run (first of a shape) is the test shapes': on a long one it doubled the
                    # interpreter's time for a check the test shapes make
                    first_of_shape=key not in seen and shape not in task.shapes.long, inputs=inputs)
        seen.add(key)
        if with_reference:
            with ieee_float32():
                ref = task_call(task, "reference", reference, shape, *[upcast(v) for v in inputs])
            refs = ref if isinstance(ref, (tuple, list)) else [ref]
            if not all(isinstance(r, torch.Tensor) for r in refs):
                raise BadInput(f"{task.where('reference')}: {task.reference} returned "
                               f"{', '.join(type(r).__name__ for r in refs)}, expected a tensor or a tuple of "
                               f"tensors, for shape {shape}")
            case.reference = [r.detach() for r in refs]
        cases.append(case)
    return cases


def write_inputs(cases: list[Case], job_dir: Path) -> list[dict[str, Any]]:
    """Save each case's inputs for the worker; returns the job's case entries. The case with the most input
    elements is marked `probe_launches`: the worker runs it once more with every Triton launch a no-op."""
    job_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for case in cases:
        name = f"inputs-{case.id}.pt"
        torch.save(list(case.inputs), job_dir / name)
        entry = {"id": case.id, "inputs": name, "first_of_shape": case.first_of_shape, "shape": case.shape,
                 "dtype": case.dtype}
        if case.reference is not None:
            expected = sum(r.numel() for r in case.reference) * TORCH_DTYPES[case.dtype].itemsize
            entry["max_output_bytes"] = max(OUTPUT_BYTES_FACTOR * expected, 1 << 20)
        entries.append(entry)
    if cases:
        entries[probe_index(cases)]["probe_launches"] = True
    return entries


def probe_index(cases: list[Case]) -> int:
    """The case the worker re-runs with every launch a no-op: the one with the most input elements."""
    sizes = [sum(v.numel() for v in c.inputs if isinstance(v, torch.Tensor)) for c in cases]
    return sizes.index(max(sizes))


def degenerate_warnings(task: TaskSpec) -> list[str]:
    """Warnings for a task a kernel returning zeros or a constant could pass: the reference output on the largest
    test shape is tiny, nearly constant, or the same for two different seeds."""
    largest = max(task.shapes.test, key=lambda s: _numel_hint(s))
    a, b = make_cases(task, [largest], 2, with_reference=True)
    warnings = []
    for i, (ra, rb) in enumerate(zip(a.reference or [], b.reference or [])):
        x, y = ra.to(torch.float64).flatten(), rb.to(torch.float64).flatten()
        x, y = x[torch.isfinite(x)], y[torch.isfinite(y)]
        if x.numel() < 2:
            continue
        count = len(a.reference or [])
        name = f"reference {task.output_name(i, count)}" if count > 1 else "the reference output"
        rms = float(x.pow(2).mean().sqrt())
        where = f"on {a.label()}"
        if rms < 1e-6:
            warnings.append(f"{name} is tiny in magnitude (RMS {rms:.2g}) {where}: a kernel returning zeros is close "
                            "in absolute terms")
        elif float(x.std()) < 1e-3 * rms:
            warnings.append(f"{name} is nearly constant {where}: a kernel returning a constant could pass")
        elif x.shape == y.shape and float((x - y).norm()) <= 1e-6 * float(x.norm()):
            warnings.append(f"{name} does not change with its inputs (seeds {a.seed} and {b.seed}) {where}: "
                            "a kernel that ignores its inputs could pass")
    return warnings


def _numel_hint(shape: dict[str, Any]) -> float:
    n = 1.0
    for v in shape.values():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            n *= max(float(v), 1.0)
    return n
