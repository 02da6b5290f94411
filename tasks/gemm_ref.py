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
    if dist == "uniform":
        return torch.rand(size, generator=g) * 2 - 1
    if dist == "heavy_tailed":  # Student-t with 2 dof: a few entries dominate their dot products
        z = torch.randn(size, generator=g)
        chi2 = torch.randn(size, generator=g) ** 2 + torch.randn(size, generator=g) ** 2
        return z / torch.sqrt(chi2 / 2)
    if dist == "large":  # magnitudes where a half-precision accumulator would overflow (fp16 max is 65504)
        return torch.randn(size, generator=g) * 300
    return torch.randn(size, generator=g)
