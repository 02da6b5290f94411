"""Cheat: the same split as interpreter_tells_build.py, through a module-level constexpr the kernel reads (Triton
folds globals into the build) instead of an argument."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    if HONEST:
        e = tl.exp(x - tl.max(x, axis=0))
        x = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride + offs, x, mask=mask)


HONEST = tl.constexpr(type(softmax_kernel).__name__ != "JITFunction")


def kernel(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
