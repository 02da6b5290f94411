"""InstanceNorm2d (no affine, no running statistics): each (image, channel) plane is a row of H*W elements. A first
kernel sums each row's elements and squares in float32, many programs a row, adding their partial sums into the row's
two accumulators (atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps). The
variance is E[x^2] - mean^2 in float32, clamped at zero."""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
BLOCKS_PER_PROGRAM = 16


@triton.jit
def stats_kernel(stats_ptr, x_ptr, n, BLOCK: tl.constexpr, PER: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n
    start = tl.program_id(1).to(tl.int64) * BLOCK * PER
    s = tl.zeros([BLOCK], tl.float32)
    q = tl.zeros([BLOCK], tl.float32)
    for j in range(0, PER):
        offs = start + j * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + offs, mask=offs < n, other=0.0).to(tl.float32)
        s += x
        q += x * x
    tl.atomic_add(stats_ptr + 2 * row, tl.sum(s, axis=0))
    tl.atomic_add(stats_ptr + 2 * row + 1, tl.sum(q, axis=0))


@triton.jit
def normalize_kernel(out_ptr, x_ptr, stats_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    mean = tl.load(stats_ptr + 2 * row) / n
    var = tl.maximum(tl.load(stats_ptr + 2 * row + 1) / n - mean * mean, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    x = tl.load(x_ptr + base + offs, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, ((x - mean) * rstd).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = math.prod(x.shape[2:])
        rows = x.numel() // n if n else 0
        stats = torch.zeros(2 * max(rows, 1), dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        stats_kernel[(rows, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM))](stats, x, n, BLOCK=BLOCK,
                                                                         PER=BLOCKS_PER_PROGRAM)
        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, stats, n, float(self.inorm.eps), BLOCK=BLOCK)
        return out
