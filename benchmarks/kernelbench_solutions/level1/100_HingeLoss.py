"""Mean of clamp(1 - predictions * targets, min=0) over every element, targets broadcast along the last dimension
(as the reference's `predictions * targets` does for a (B, N) by (N,) product): each program sums its blocks in
float32 and adds the partial sum into one float32 accumulator (atomic add), and a one-program kernel divides by the
count and writes the 0-d result in the inputs' dtype."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
BLOCKS_PER_PROGRAM = 16


@triton.jit
def partial_kernel(acc_ptr, p_ptr, t_ptr, n, t_len, BLOCK: tl.constexpr, PER: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK * PER
    s = tl.zeros([BLOCK], tl.float32)
    for j in range(0, PER):
        offs = start + j * BLOCK + tl.arange(0, BLOCK)
        ok = offs < n
        p = tl.load(p_ptr + offs, mask=ok, other=0.0).to(tl.float32)
        t = tl.load(t_ptr + offs % t_len, mask=ok, other=0.0).to(tl.float32)
        s += tl.where(ok, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.atomic_add(acc_ptr, tl.sum(s, axis=0))


@triton.jit
def finish_kernel(out_ptr, acc_ptr, n):
    tl.store(out_ptr, (tl.load(acc_ptr) / n).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p, t = predictions.contiguous(), targets.contiguous()
        assert t.dim() == 1 and p.shape[-1] == t.shape[0], "targets broadcast along the last dimension"
        n = p.numel()
        acc = torch.zeros(1, dtype=torch.float32, device=p.device)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        partial_kernel[(max(1, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM)),)](acc, p, t, n, t.shape[0], BLOCK=BLOCK,
                                                                              PER=BLOCKS_PER_PROGRAM)
        finish_kernel[(1,)](out, acc, n)
        return out
