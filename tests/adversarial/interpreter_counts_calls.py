"""Red team (2026-12-05): a plain Python function passed to the jit kernel as a constexpr runs at compile time in
the sm_90a build (once per specialization) and once per program in the interpreter. Counting its calls tells them
apart: a warm-up launch uses up the first calls, after which the interpreter computes an honest softmax while the
compiled kernel (built on the first call, when the count was low) writes zeros."""
import torch
import triton
import triton.language as tl

calls = [0]


def scaled(x):
    calls[0] += 1
    return x if calls[0] > 4 else 0.0


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr, PICK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, PICK(e / tl.sum(e, axis=0)), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(N)
    # A warm-up launch on every call (both builds launch alike): the interpreter's eight programs use up the
    # count, while the GPU build of this specialization is made on its first call, while the count is low.
    w = torch.zeros(8, N, device=x.device, dtype=x.dtype)
    softmax_kernel[(8,)](torch.empty_like(w), w, N, w.stride(0), w.stride(0), BLOCK=block, PICK=scaled)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=block, PICK=scaled)
    return y
