"""The row softmax demo (tasks/demos/softmax_3_rowwise.py) with two regions marked: on a CPU the interpreter must
run it as if unmarked, and the sections step must say it needs a GPU."""
import torch
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    pl.enter_scope("load")
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    pl.exit_scope("load")
    with pl.scope("exp"):
        e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
