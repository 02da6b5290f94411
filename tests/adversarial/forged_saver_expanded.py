"""Cheat: a 1.5 KB file that becomes gigabytes. The forged saver writes one zero expanded to the output's shape
(stride 0): a parent that loads it and upcasts it to float64 allocates the whole tensor before any check, and the
zero-filled tensor then fails on values, not on what it is."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def token_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 0.0, mask=offs < n)


_guards = getattr(sys, "modules")["rungs.worker.calls"]
# The function object stays the guards' own (the tamper snapshot compares identities); its code changes.
_guards.save_outputs.__code__ = (lambda outputs, path: __import__("torch").save([__import__("torch").zeros(1).expand(*o.shape) for o in outputs], path)).__code__


def kernel(x):
    y = torch.empty_like(x)
    token_kernel[(triton.cdiv(y.numel(), 256),)](y, y.numel(), BLOCK=256)
    return y
