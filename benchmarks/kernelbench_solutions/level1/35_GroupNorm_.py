"""GroupNorm: each (image, group of channels) is a row of (C/G)*H*W contiguous elements. A first kernel sums each
row's elements and squares in float32, many programs a row, adding their partial sums into the row's two accumulators
(atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps) and applies its channel's
weight and bias (nn.GroupNorm's, copied from the reference's `gn` by name). The variance is E[x^2] - mean^2 in
float32, clamped at zero."""
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
def normalize_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, n, plane, groups, per_group, eps,
                     BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    mean = tl.load(stats_ptr + 2 * row) / n
    var = tl.maximum(tl.load(stats_ptr + 2 * row + 1) / n - mean * mean, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    x = tl.load(x_ptr + base + offs, mask=ok, other=0.0).to(tl.float32)
    channel = (row % groups) * per_group + offs // plane
    w = tl.load(w_ptr + channel, mask=ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + channel, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        groups = self.gn.num_groups
        per_group = x.shape[1] // groups
        plane = math.prod(x.shape[2:])
        n = per_group * plane
        rows = x.numel() // n if n else 0
        w, b = self.gn.weight.contiguous(), self.gn.bias.contiguous()
        stats = torch.zeros(2 * max(rows, 1), dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        stats_kernel[(rows, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM))](stats, x, n, BLOCK=BLOCK,
                                                                         PER=BLOCKS_PER_PROGRAM)
        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, w, b, stats, n, plane, groups, per_group,
                                                        float(self.gn.eps), BLOCK=BLOCK)
        return out
