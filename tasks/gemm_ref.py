"""Matrix product C = A @ B: the reference and the input maker for tasks/gemm.yaml."""
from __future__ import annotations

import torch


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A @ B in whatever precision the inputs come in (the ladder passes float64)."""
    return a @ b


def make_inputs(shape: dict, dtype: torch.dtype, seed: int, dist: str = "normal") -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    M, N, K = int(shape["M"]), int(shape["N"]), int(shape["K"])
    a, b = _draw(g, (M, K), dist), _draw(g, (K, N), dist)
    return a.to(dtype), b.to(dtype)


def _draw(g: torch.Generator, size: tuple[int, int], dist: str) -> torch.Tensor:
    # No heavy-tailed inputs: their products put a few outputs hundreds of times above the RMS, where rounding
    # the exact answer once to bfloat16 already breaks the RMS-scaled max-error guard (0.14 against 0.08).
    if dist == "uniform":
        return torch.rand(size, generator=g) * 2 - 1
    if dist == "large":  # magnitudes where a half-precision accumulator would overflow (fp16 max is 65504)
        return torch.randn(size, generator=g) * 300
    return torch.randn(size, generator=g)
