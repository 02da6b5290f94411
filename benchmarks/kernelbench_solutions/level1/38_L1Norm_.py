"""x / mean(|x|) over dim 1 of a (B, D) tensor: one program per row, a first loop over the row's blocks for the statistic (kept
per lane, combined at the end) and a second writing the output; float32 inside, the input's dtype out. Written by
make_rowwise.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def row_kernel(out_ptr, x_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * d
    s = tl.zeros([BLOCK], tl.float32)
    for c0 in range(0, d, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < d, other=0.0).to(tl.float32)
        s += tl.abs(x)
    scale = tl.sum(s, axis=0) / d
    for c0 in range(0, d, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < d, other=0.0).to(tl.float32)
        tl.store(out_ptr + row + cols, (x / scale).to(out_ptr.dtype.element_ty), mask=cols < d)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D = x.shape
        out = torch.empty_like(x)
        row_kernel[(B,)](out, x, D, BLOCK=BLOCK)
        return out
