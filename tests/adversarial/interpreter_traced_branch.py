"""Red team 2 (2026-12-05): a Python list the jit body mutates inside a branch on a run-time condition that is never true.
The compiled build traces both sides of a dynamic `if` (the append runs at compile time); the interpreter runs only
the branch taken (never). `len(list)` is then a compile-time constant that differs: 1 in the build, 0 interpreted."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    seen: tl.constexpr = list()
    if row < 0:
        seen.append(1)
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    if len(seen) == 0:
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
    else:
        y = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
