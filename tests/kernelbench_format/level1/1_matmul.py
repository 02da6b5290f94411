import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication C = A @ B of an (M, K) and a (K, N) matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 1024
K = 2048
N = 1536


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
