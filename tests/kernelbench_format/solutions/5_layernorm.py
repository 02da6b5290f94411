"""LayerNorm over the last dimension with weight and bias: one program per row, mean and variance in fp32 over
blocks of the row, then a normalizing pass. The parameters live in an nn.LayerNorm so the reference's copy in."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(out_ptr, x_ptr, w_ptr, b_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * n
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(base + offs, mask=offs < n, other=0.0)
    mean = tl.sum(acc, axis=0) / n
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        d = tl.where(offs < n, tl.load(base + offs, mask=offs < n, other=0.0) - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n + eps)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(base + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask)
        b = tl.load(b_ptr + offs, mask=mask)
        tl.store(out_ptr + row * n + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        layernorm_kernel[(x.numel() // n,)](out, x, self.ln.weight, self.ln.bias, n, self.ln.eps, BLOCK=128)
        return out
