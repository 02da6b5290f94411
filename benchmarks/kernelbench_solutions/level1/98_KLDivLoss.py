"""kl_div(log(predictions), targets, reduction='batchmean') = sum(targets * (log(targets) - log(predictions))) / rows:
each program sums its blocks in float32 (a zero target adds zero, as torch's xlogy does) and adds the partial sum
into one float32 accumulator (atomic add); a one-program kernel divides by the rows and writes the 0-d result."""
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
        p = tl.load(p_ptr + offs, mask=ok, other=1.0).to(tl.float32)
        t = tl.load(t_ptr + offs, mask=ok, other=0.0).to(tl.float32)
        s += tl.where(t > 0, t * (tl.log(tl.where(t > 0, t, 1.0)) - tl.log(p)), 0.0)
    tl.atomic_add(acc_ptr, tl.sum(s, axis=0))


@triton.jit
def finish_kernel(out_ptr, acc_ptr, rows):
    tl.store(out_ptr, (tl.load(acc_ptr) / rows).to(out_ptr.dtype.element_ty))


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
        finish_kernel[(1,)](out, acc, p.shape[0])
        return out
