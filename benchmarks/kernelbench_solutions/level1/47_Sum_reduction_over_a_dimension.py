"""Sum over dim 1 of a (B, D1, D2) tensor: one program per (batch, block of D2 columns), looping over D1, so the
reads along D2 stay contiguous."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(out_ptr, x_ptr, d1, d2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d2
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, d1):
        acc += tl.load(x_ptr + (b * d1 + i) * d2 + cols, mask=mask, other=0.0)
    tl.store(out_ptr + b * d2 + cols, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1, "this kernel reduces dim 1"
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.empty((B, 1, D2), dtype=x.dtype, device=x.device)
        sum_dim1_kernel[(B, triton.cdiv(D2, 64))](out, x, D1, D2, BLOCK=64)
        return out
