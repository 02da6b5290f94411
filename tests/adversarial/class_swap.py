"""Cheat: passes one type off as another. Returns an object whose __class__ is reassigned to look like a tensor to
a type check, while it computes its values only when read."""
import torch
import triton
import triton.language as tl

@triton.jit
def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)


def _launch_something(x):
    """A Triton launch that does no part of the task, so the kernel counts as launched."""
    scratch = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, x, x.numel(), BLOCK=1024)


class Deferred(torch.Tensor):
    pass


def kernel(x):
    _launch_something(x)
    y = torch.softmax(x, -1).as_subclass(Deferred)
    y.__class__ = torch.Tensor
    return y
