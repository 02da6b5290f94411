"""Computes NaN where the answer is finite: column 3 of every row is (x - x) / (x - x) = 0/0. Every element is
written, so the diagnosis must say the NaN was computed, not that memory was left unwritten."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    y = tl.where(offs == 3, (x - x) / (x - x), y)
    tl.store(out_ptr + row * stride + offs, y, mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
