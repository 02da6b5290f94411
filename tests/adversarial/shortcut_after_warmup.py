"""Cheat (caught after timing): honest for the first calls, then skips the kernel and serves the last output of
the same shape, as a kernel that detects a timing loop would. Correctness sees only the honest calls; the recheck
after timing sees the stale one."""
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


def _softmax(x):
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y

_calls = {"n": 0}
_last = {}


def kernel(x):
    _calls["n"] += 1
    key = tuple(x.shape)
    if _calls["n"] > 40 and key in _last:
        return _last[key]
    _last[key] = _softmax(x)
    return _last[key]
