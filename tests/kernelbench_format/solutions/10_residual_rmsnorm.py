"""(x + residual) then RMSNorm with a weight, fused: one program per row; the sum is formed twice (once for the
mean square, once to write) rather than stored, so the row is read twice and written once."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(out_ptr, x_ptr, r_ptr, w_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        h = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0) + tl.load(r_ptr + row * n + offs, mask=mask, other=0.0)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n + eps)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        h = tl.load(x_ptr + row * n + offs, mask=mask) + tl.load(r_ptr + row * n + offs, mask=mask)
        tl.store(out_ptr + row * n + offs, h * rstd * tl.load(w_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x, residual = x.contiguous(), residual.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        add_rmsnorm_kernel[(x.numel() // n,)](out, x, residual, self.weight, n, self.eps, BLOCK=128)
        return out
