"""Softmax whose inputs hold a row of -inf: the exact answer there is NaN (0/0), so an honest kernel computes NaN
where the reference has it, and must pass."""
from __future__ import annotations

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def make_inputs(shape: dict, dtype: torch.dtype, seed: int, dist: str = "normal") -> tuple[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    M, N = int(shape["M"]), int(shape["N"])
    x = torch.randn(M, N, generator=g)
    x[M // 2] = -float("inf")
    return (x.to(dtype),)
