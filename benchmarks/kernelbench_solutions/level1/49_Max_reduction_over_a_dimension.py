"""Max over dim 1 of a (B, D1, D2) tensor: one program per (batch, block of D2 columns), looping over D1 in
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
    acc = tl.full([BLOCK], float('-inf'), tl.float32)
    for r0 in range(0, d1, ROWS):
        rows = r0 + tl.arange(0, ROWS)
        ok = (rows[:, None] < d1) & col_ok[None, :]
        x = tl.load(x_ptr + (b * d1 + rows[:, None]) * d2 + cols[None, :], mask=ok, other=float('-inf')).to(tl.float32)
        acc = tl.maximum(acc, tl.max(x, axis=0))
    tl.store(out_ptr + b * d2 + cols, acc.to(out_ptr.dtype.element_ty), mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1, "this kernel reduces dim 1"
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.empty((B, D2), dtype=x.dtype, device=x.device)
        reduce_dim1_kernel[(B, triton.cdiv(D2, 64))](out, x, D1, D2, ROWS=16, BLOCK=64)
        return out
