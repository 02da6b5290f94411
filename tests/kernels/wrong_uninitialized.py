"""Reads memory nothing wrote: takes max(stale, sum) from a scratch buffer that was never initialized.

With NaN in fresh memory tl.maximum ignores the stale value and the answer is right; with anything else in
that memory it is wrong. Only the determinism re-run, over memory poisoned differently, catches it.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, sums_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    s = tl.maximum(tl.load(sums_ptr + row), tl.sum(e, axis=0))
    tl.store(out_ptr + row * stride + offs, e / s, mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    sums = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    softmax_kernel[(x.shape[0],)](y, x, sums, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
