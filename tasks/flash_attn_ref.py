"""Attention forward (softmax(q k^T / sqrt(D), causal mask) v): the reference and the input maker for
tasks/flash_attn.yaml."""
from __future__ import annotations

import math

import torch


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Plain attention in whatever precision the inputs come in (the ladder passes float64).

    q, k, v are [B, H, S, D]; with `causal`, query i sees keys 0..i (the mask is aligned at the top left).
    """
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ k.transpose(-2, -1)) * scale
    if causal:
        s_q, s_k = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(s_q, s_k, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def make_inputs(shape: dict, dtype: torch.dtype, seed: int, dist: str = "normal"):
    """(q, k, v, causal): q, k, v [B, H, S, D] on the CPU, causal a Python bool taken from the shape."""
    g = torch.Generator().manual_seed(seed)
    B, H, S, D = (int(shape[n]) for n in ("B", "H", "S", "D"))
    causal = bool(shape["causal"])
    size = (B, H, S, D)
    if dist == "uniform":
        q, k, v = (torch.rand(size, generator=g) * 2 - 1 for _ in range(3))
    elif dist == "large":  # q and k scaled by 4: logits with a std of 16, so exp() overflows without the max subtraction
        q, k, v = torch.randn(size, generator=g) * 4, torch.randn(size, generator=g) * 4, torch.randn(size, generator=g)
    elif dist == "heavy_tailed":  # Student-t q and k with 2 dof: rare huge logits. v stays normal: heavy-tailed
        # values would put outputs far above their RMS, where one bf16 ulp breaks the RMS-scaled max-error guard.
        q, k, v = _student_t(g, size), _student_t(g, size), torch.randn(size, generator=g)
    else:
        q, k, v = (torch.randn(size, generator=g) for _ in range(3))
    return q.to(dtype), k.to(dtype), v.to(dtype), causal


def _student_t(g: torch.Generator, size: tuple[int, ...]) -> torch.Tensor:
    z = torch.randn(size, generator=g)
    chi2 = torch.randn(size, generator=g) ** 2 + torch.randn(size, generator=g) ** 2
    return z / torch.sqrt(chi2 / 2)
