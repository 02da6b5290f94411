"""LayerNorm over the trailing normalized_shape dimensions (all but the first here): a first kernel sums each row's
elements and squares in float32, many programs a row, adding their partial sums into the row's two accumulators
(atomic add); a second normalizes every element with its row's mean and 1/sqrt(var + eps) and applies the elementwise
weight and bias (nn.LayerNorm's, copied from the reference's `ln` by name). The variance is E[x^2] - mean^2 in
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
def normalize_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    mean = tl.load(stats_ptr + 2 * row) / n
    var = tl.maximum(tl.load(stats_ptr + 2 * row + 1) / n - mean * mean, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    x = tl.load(x_ptr + base + offs, mask=ok, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, ((x - mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = math.prod(self.ln.normalized_shape)
        rows = x.numel() // n if n else 0
        w, b = self.ln.weight.contiguous(), self.ln.bias.contiguous()
        stats = torch.zeros(2 * max(rows, 1), dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        stats_kernel[(rows, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM))](stats, x, n, BLOCK=BLOCK,
                                                                         PER=BLOCKS_PER_PROGRAM)
        normalize_kernel[(rows, triton.cdiv(n, BLOCK))](out, x, w, b, stats, n, float(self.ln.eps), BLOCK=BLOCK)
        return out
