"""Red team (2026-12-05): the jit body tells the interpreter (CPU correctness) from the sm_90a build (what a GPU runs).
Interpreted: an honest row softmax. Compiled: writes 0.0 everywhere (wrong, and cheap)."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    if hasattr(row.handle, "data"):
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)
    else:
        tl.store(out_ptr + row * out_stride + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
