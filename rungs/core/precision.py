"""Float32 math precision, pinned: TF32 off where float32 is what a task asks for.

On an Ampere-or-later GPU, torch may run float32 matmuls and convolutions on TF32 tensor cores (10 mantissa bits in
the products): `torch.backends.cuda.matmul.allow_tf32`, `torch.backends.cudnn.allow_tf32` (on by default) and
`torch.set_float32_matmul_precision`. A reference computed that way, or a candidate judged in a process where a
library left it on, is judged against the wrong arithmetic. So:

- the trusted references (rungs/ladder/cases.py, and any float32 reference computed on the GPU) run under
  `ieee_float32()`;
- the worker calls `pin_precision(task.dtypes)` before the candidate is imported: TF32 off unless the task lists
  the `tf32` dtype (then torch's defaults stand).

The eager and torch.compile baselines (rungs/ladder/baseline.py) are not pinned: they time what torch does by default.
Triton's `tl.dot` chooses its own precision (`input_precision`, tf32 by default on the GPU) whatever these flags
say; rungs/ladder/metrics.py names that cause when a float32 output misses by about TF32's rounding.

Standard library and torch only: the worker imports this.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator

import torch


def _legacy_state() -> tuple[Any, ...] | None:
    try:
        return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                torch.get_float32_matmul_precision())
    except RuntimeError:  # the fp32_precision API was used in this process: the legacy flags cannot be read
        return None


def _set_ieee() -> None:
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    except RuntimeError:
        # torch >= 2.9 refuses to mix the legacy flags with its fp32_precision API once the latter was used
        torch.backends.fp32_precision = "ieee"
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.fp32_precision = "ieee"


def tf32_off() -> bool:
    """True when neither float32 matmuls nor cuDNN convolutions may use TF32 in this process."""
    state = _legacy_state()
    if state is not None:
        return state[0] is False and state[1] is False and state[2] == "highest"
    return (torch.backends.cuda.matmul.fp32_precision == "ieee"
            and torch.backends.cudnn.fp32_precision == "ieee")


def pin_precision(dtypes: Iterable[str] = ()) -> bool:
    """Turn TF32 off for float32 matmuls and convolutions in this process, unless `dtypes` (the task's) include
    "tf32", in which case torch's defaults stand. Returns whether it pinned. The worker calls it before the candidate
    is imported."""
    if "tf32" in set(dtypes):
        return False
    _set_ieee()
    return True


@contextlib.contextmanager
def ieee_float32() -> Iterator[None]:
    """TF32 off inside (the trusted references), the process's previous settings back after."""
    before = _legacy_state()
    _set_ieee()
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(RuntimeError):
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before[0], before[1]
                torch.set_float32_matmul_precision(before[2])
