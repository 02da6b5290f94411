"""Honest (red team 2026-12-07 found it refused): the row strides handed to the kernel in a collections.namedtuple,
which Triton takes as a tuple: described field by field when its class is exactly what namedtuple makes."""
from collections import namedtuple

import torch
import triton
import triton.language as tl

Strides = namedtuple("Strides", ["inp", "out"])


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, strides, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * strides.inp + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * strides.out + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, Strides(x.stride(0), y.stride(0)), BLOCK=triton.next_power_of_2(N))
    return y
