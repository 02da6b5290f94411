"""Argmin (the first index of the smallest value, as torch.argmin) over dim 1 of a (B, D1, D2) tensor: one program per (batch, block of D2 columns), looping over D1 in
blocks of rows, so the reads along D2 stay contiguous; accumulated in float32."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def reduce_dim1_kernel(out_ptr, x_ptr, d1, d2, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    col_ok = cols < d2
    best = tl.full([BLOCK], float('inf'), tl.float32)
    arg = tl.zeros([BLOCK], tl.int64)
    for r0 in range(0, d1, ROWS):
        rows = r0 + tl.arange(0, ROWS)
        ok = (rows[:, None] < d1) & col_ok[None, :]
        x = tl.load(x_ptr + (b * d1 + rows[:, None]) * d2 + cols[None, :], mask=ok, other=float('inf')).to(tl.float32)
        m = tl.min(x, axis=0)
        i = tl.min(tl.where(x == m[None, :], rows[:, None], d1), axis=0)
        better = m < best
        arg = tl.where(better, i.to(tl.int64), arg)
        best = tl.where(better, m, best)
    tl.store(out_ptr + b * d2 + cols, arg, mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1, "this kernel reduces dim 1"
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.empty((B, D2), dtype=torch.int64, device=x.device)
        reduce_dim1_kernel[(B, triton.cdiv(D2, 64))](out, x, D1, D2, ROWS=16, BLOCK=64)
        return out
