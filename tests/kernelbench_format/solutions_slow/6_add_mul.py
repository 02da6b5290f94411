"""A solution still running when the eval is stopped (tests/test_eval.py's Ctrl-C test): right, but it waits ten
minutes before its first call's work, so an eval that waited for its running problems after a Ctrl-C would take
that long to stop."""
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma_kernel(out_ptr, a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask)
             + tl.load(c_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        time.sleep(600)
        out = torch.empty_like(a)
        fma_kernel[(triton.cdiv(a.numel(), 1024),)](out, a, b, c, a.numel(), BLOCK=1024)
        return out
