import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W^T + bias), its bias shaped by a tuple the file builds from out_features (KernelBench level 2's
    76_Gemm_Add_ReLU): the tuple pins out_features at the file's 8192, so in_features goes long alone."""

    def __init__(self, in_features: int, out_features: int, bias_shape: tuple):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.gemm(x) + self.bias)


batch_size = 1024
in_features = 8192
out_features = 8192
bias_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
