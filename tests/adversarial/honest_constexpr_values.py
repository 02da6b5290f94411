"""Honest: a jit helper, a dtype, a float and a tuple handed to the kernel as constexprs, and a constexpr global read
by the helper: each on the launch gate's list. (A jit helper handed as a constexpr was refused on a CPU before
2026-12-07: the interpreter's InterpretedFunction is no KernelInterface.)"""
import torch
import triton
import triton.language as tl

SHIFT: tl.constexpr = tl.constexpr(0.0)


@triton.jit
def ident(x):
    return x + SHIFT


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr, F: tl.constexpr,
                   DT: tl.constexpr, K: tl.constexpr, S: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf")).to(DT)
    x = F(x) * K
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N), F=ident,
                         DT=tl.float32, K=1.0, S=(1, 2))
    return y
