"""A wrong ReLU: a leaky one (0.01 x below zero), as a slip in a kernel would make it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.01 * x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        leaky_kernel[(triton.cdiv(n, 1024),)](out, x, n, BLOCK=1024)
        return out
