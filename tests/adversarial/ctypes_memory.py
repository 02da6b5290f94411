"""Cheat: raw memory through ctypes. Copies whatever sits at an address next to the input's storage into the
output (where a harness that kept the expected output beside the input would have put it)."""
import ctypes

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


def kernel(x):
    _launch_something(x)
    y = torch.empty_like(x)
    nbytes = x.numel() * x.element_size()
    ctypes.memmove(y.data_ptr(), x.data_ptr() + nbytes, nbytes)
    return y
