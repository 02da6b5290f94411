"""x / ||x||_F over the whole tensor: a first kernel sums squares in float32 (per-program partial sums added into one
accumulator, atomic add), a second divides every element by the square root of that sum."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096
BLOCKS_PER_PROGRAM = 16


@triton.jit
def sum_squares_kernel(acc_ptr, x_ptr, n, BLOCK: tl.constexpr, PER: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK * PER
    s = tl.zeros([BLOCK], tl.float32)
    for j in range(0, PER):
        offs = start + j * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        s += x * x
    tl.atomic_add(acc_ptr, tl.sum(s, axis=0))


@triton.jit
def divide_kernel(out_ptr, x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    inv = 1.0 / tl.sqrt(tl.load(acc_ptr))
    x = tl.load(x_ptr + offs, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * inv).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        acc = torch.zeros(1, dtype=torch.float32, device=x.device)
        out = torch.empty_like(x)
        sum_squares_kernel[(max(1, triton.cdiv(n, BLOCK * BLOCKS_PER_PROGRAM)),)](acc, x, n, BLOCK=BLOCK,
                                                                                  PER=BLOCKS_PER_PROGRAM)
        divide_kernel[(triton.cdiv(n, BLOCK),)](out, x, acc, n, BLOCK=BLOCK)
        return out
