import torch
import torch.nn as nn


class Model(nn.Module):
    """x scaled by 1e-9: outputs far below any absolute tolerance, so a kernel returning zeros is close in absolute
    terms (KernelBench's allclose would pass it)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1e-9


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
