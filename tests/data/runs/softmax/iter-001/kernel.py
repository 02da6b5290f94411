"""Row softmax, first try: one program per row, the row loaded whole.

Does not compile: tl.arange needs compile-time bounds, and n_cols is a run-time argument.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride):
    row = tl.program_id(0)
    offs = tl.arange(0, n_cols)
    x = tl.load(in_ptr + row * stride + offs)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0))


def kernel(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
