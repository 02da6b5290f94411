"""Fused residual add + RMSNorm in bf16 (a test task): y = (x + r) / sqrt(mean((x + r)^2) + eps) * w."""
from __future__ import annotations

import torch

EPS = 1e-6


def reference(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = x + r
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def make_inputs(shape: dict, dtype: torch.dtype, seed: int, dist: str = "normal"):
    g = torch.Generator().manual_seed(seed)
    M, N = int(shape["M"]), int(shape["N"])
    x, r = torch.randn(M, N, generator=g), torch.randn(M, N, generator=g)
    w = 1 + 0.1 * torch.randn(N, generator=g)
    return x.to(dtype), r.to(dtype), w.to(dtype)
