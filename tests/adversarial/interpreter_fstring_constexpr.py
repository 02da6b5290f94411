"""Red team 2 (2026-12-05): an f-string of a tl.constexpr object. The compiler formats a constexpr's value (f"{C}" -> "0"); the
interpreter runs the f-string as Python, where str() of the constexpr object is its repr ("constexpr[0]"). No
builtin beyond len, no private attribute, no list."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    ZERO: tl.constexpr = tl.constexpr(0)
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    if len(f"{ZERO}") == 1:
        y = tl.zeros([BLOCK], dtype=tl.float32)
    else:
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
