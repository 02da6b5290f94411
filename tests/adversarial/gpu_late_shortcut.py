"""Cheat: honest for its first calls, then every 8th row is skipped (a timed-only shortcut keyed on the call count,
not on global state): the first timed call is right, later ones are not, and the recheck after timing runs on a
test shape it serves honestly. The run phase calls it three times at the test's shape (the case, the determinism
re-run, the no-op re-run), the bench phase's first call and warm-up three more: it turns after eight."""
import torch
import triton
import triton.language as tl

_calls = {}


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, SKIP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if SKIP:
        row = row + row // 7
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x):
    M, N = x.shape
    y = torch.empty_like(x)
    key = (M, N)
    _calls[key] = _calls.get(key, 0) + 1
    late = _calls[key] > 8
    rows = M - M // 8 if late else M
    softmax_kernel[(rows,)](y, x, N, x.stride(0), SKIP=late, BLOCK=triton.next_power_of_2(N))
    return y
