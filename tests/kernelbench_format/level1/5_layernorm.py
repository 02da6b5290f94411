import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last dimension, with a learned weight and bias (drawn at random, so a candidate that
    keeps its own ones and zeros fails)."""

    def __init__(self, features: int):
        super().__init__()
        self.ln = nn.LayerNorm(features)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.5)
            self.ln.bias.normal_(0.0, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 64
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
