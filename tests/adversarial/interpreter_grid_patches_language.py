"""A grid function that changes triton.language while a launch runs (in the interpreter: after its patch of the
language, before the programs). Refused where the language's names are checked (rungs/backends/triton_namespaces.py):
the launch gate calls the grid function to log the grid, so the compile phase sees the change before its build."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def grid(meta, rows=[0]):
    setattr(tl, "scale_of_the_day", 1.0)
    return (rows[0],)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    grid.__defaults__[0][0] = M
    softmax_kernel[grid](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
