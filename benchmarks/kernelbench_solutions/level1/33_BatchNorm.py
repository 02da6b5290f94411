"""BatchNorm2d as nn computes it: in training mode (KernelBench's, and a module's default) each channel is normalized
with the batch's own mean and biased variance over (image, row, column); in eval mode with the running statistics.
A first kernel sums each channel's elements and squares in float32, one program per (image, channel) plane and block,
adding its partial sums into the channel's two accumulators (atomic add); the sums are of x minus the channel's first
element, so E[x^2] - mean^2 does not cancel away the variance of data far from zero. A second kernel normalizes every
element and applies the channel's weight and bias (the module's, copied from the reference's `bn` by name). The
running statistics are not updated (the output does not depend on them in training mode)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
BLOCKS_PER_PROGRAM = 16


@triton.jit
def stats_kernel(stats_ptr, x_ptr, C, HW, BLOCK: tl.constexpr, PER: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)  # image * C + channel
    c = plane % C
    shift = tl.load(x_ptr + c * HW).to(tl.float32)  # the channel's first element (image 0)
    start = tl.program_id(1).to(tl.int64) * BLOCK * PER
    s = tl.zeros([BLOCK], tl.float32)
    q = tl.zeros([BLOCK], tl.float32)
    for j in range(0, PER):
        offs = start + j * BLOCK + tl.arange(0, BLOCK)
        ok = offs < HW
        x = tl.load(x_ptr + plane * HW + offs, mask=ok, other=0.0).to(tl.float32)
        d = tl.where(ok, x - shift, 0.0)
        s += d
        q += d * d
    tl.atomic_add(stats_ptr + 2 * c, tl.sum(s, axis=0))
    tl.atomic_add(stats_ptr + 2 * c + 1, tl.sum(q, axis=0))


@triton.jit
def normalize_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, rmean_ptr, rvar_ptr, C, HW, count, eps,
                     BATCH: tl.constexpr, AFFINE: tl.constexpr, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    c = plane % C
    if BATCH:
        shift = tl.load(x_ptr + c * HW).to(tl.float32)
        mean_shifted = tl.load(stats_ptr + 2 * c) / count
        var = tl.maximum(tl.load(stats_ptr + 2 * c + 1) / count - mean_shifted * mean_shifted, 0.0)
        mean = shift + mean_shifted
    else:
        mean = tl.load(rmean_ptr + c).to(tl.float32)
        var = tl.load(rvar_ptr + c).to(tl.float32)
    scale = 1.0 / tl.sqrt(var + eps)
    shift_out = -mean * scale
    if AFFINE:
        w = tl.load(w_ptr + c).to(tl.float32)
        scale, shift_out = scale * w, shift_out * w + tl.load(b_ptr + c).to(tl.float32)
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < HW
    x = tl.load(x_ptr + plane * HW + offs, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + plane * HW + offs, (x * scale + shift_out).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        x = x.contiguous()
        n, c = x.shape[:2]
        hw = x[0, 0].numel() if x.numel() else 0
        out = torch.empty_like(x)
        if out.numel() == 0:
            return out
        batch = bn.training or bn.running_mean is None  # nn's rule: batch statistics unless eval with running ones
        stats = torch.zeros(2 * c, dtype=torch.float32, device=x.device)
        if batch:
            stats_kernel[(n * c, triton.cdiv(hw, BLOCK * BLOCKS_PER_PROGRAM))](stats, x, c, hw, BLOCK=BLOCK,
                                                                              PER=BLOCKS_PER_PROGRAM)
        affine = bn.weight is not None
        normalize_kernel[(n * c, triton.cdiv(hw, BLOCK))](
            out, x, bn.weight if affine else x, bn.bias if affine else x, stats,
            stats if batch else bn.running_mean, stats if batch else bn.running_var, c, hw, float(n * hw),
            float(bn.eps), BATCH=batch, AFFINE=affine, BLOCK=BLOCK)
        return out
