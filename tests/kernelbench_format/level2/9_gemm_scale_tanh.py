import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer with no bias, scaled, then tanh."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(x) * self.scale)


batch_size = 256
in_features = 512
out_features = 1024
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
