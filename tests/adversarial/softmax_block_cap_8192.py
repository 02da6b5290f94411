"""Wrong past one block: the row block is capped at 8192 columns, so a longer row is normalized over its first
8192 columns only and the rest is never written. Every test shape under 8192 columns passes."""
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
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    block = min(triton.next_power_of_2(x.shape[1]), 8192)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=block)
    return y
