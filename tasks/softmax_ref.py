"""Row softmax: the reference and the input maker for tasks/softmax.yaml."""
from __future__ import annotations

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, in whatever precision x comes in (the ladder passes float64)."""
    return torch.softmax(x, dim=-1)


def make_inputs(shape: dict, dtype: torch.dtype, seed: int, dist: str = "normal") -> tuple[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    M, N = int(shape["M"]), int(shape["N"])
    if dist == "uniform":
        x = torch.rand(M, N, generator=g) * 2 - 1
    elif dist == "heavy_tailed":  # Student-t with 2 dof: rare huge logits
        x = _student_t(g, M, N)
    elif dist == "large":  # magnitudes that overflow exp() without the max subtraction
        x = torch.randn(M, N, generator=g) * 100
    elif dist == "edge":  # one dominant logit per row: the output is near one-hot
        x = torch.randn(M, N, generator=g)
        x[torch.arange(M), torch.randint(0, N, (M,), generator=g)] = 80.0
    else:
        x = torch.randn(M, N, generator=g)
    return (x.to(dtype),)


def _student_t(g: torch.Generator, M: int, N: int) -> torch.Tensor:
    z = torch.randn(M, N, generator=g)
    chi2 = torch.randn(M, N, generator=g) ** 2 + torch.randn(M, N, generator=g) ** 2
    return z / torch.sqrt(chi2 / 2)
