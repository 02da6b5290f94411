"""smooth_l1_loss (beta 1, mean): 0.5 d^2 where |d| < 1, else |d| - 0.5, averaged over every element. Each program
sums its blocks in float32 and adds the partial sum into one float32 accumulator (atomic add); a one-program
kernel divides by the count and writes the 0-d result in the inputs' dtype."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
BLOCKS_PER_PROGRAM = 16


@triton.jit
def partial_kernel(acc_ptr, p_ptr, t_ptr, n, BLOCK: tl.constexpr, PER: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK * PER
    s = tl.zeros([BLOCK], tl.float32)
    for j in range(0, PER):
        offs = start + j * BLOCK + tl.arange(0, BLOCK)
        ok = offs < n
        d = tl.load(p_ptr + offs, mask=ok, other=0.0).to(tl.float32) - tl.load(t_ptr + offs, mask=ok, other=0.0).to(tl.float32)
        a = tl.abs(d)
        s += tl.where(a < 1.0, 0.5 * d * d, a - 0.5)
    tl.atomic_add(acc_ptr, tl.sum(s, axis=0))


@triton.jit
def finish_kernel(out_ptr, acc_ptr, n):
    tl.store(out_ptr, (tl.load(acc_ptr) / n).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p, t = predictions.contiguous(), targets.contiguous()
        n = p.numel()
        acc = torch.zeros(1, dtype=torch.float32, device=p.device)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        partial_kernel[(max(1, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM)),)](acc, p, t, n, BLOCK=BLOCK,
                                                                              PER=BLOCKS_PER_PROGRAM)
        finish_kernel[(1,)](out, acc, n)
        return out
