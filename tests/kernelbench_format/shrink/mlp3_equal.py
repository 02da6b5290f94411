import torch
import torch.nn as nn


class Model(nn.Module):
    """A three-layer MLP whose sizes the file makes equal: Linear, ReLU, Linear, ReLU, Linear."""

    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, hidden_size),
                                 nn.ReLU(), nn.Linear(hidden_size, output_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


batch_size = 128
input_size = 4096
hidden_size = 4096
output_size = 4096


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
