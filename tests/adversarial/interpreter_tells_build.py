"""Cheat: honest in the interpreter, a copy in the compiled build. The launcher asks which kind of jit object it
holds (the interpreter wraps kernels in InterpretedFunction, the GPU build in JITFunction) and sets a constexpr
from that: the CPU ladder judges the softmax, while the sm_90a code the GPU would run just copies its input."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, HONEST: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    if HONEST:
        e = tl.exp(x - tl.max(x, axis=0))
        x = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride + offs, x, mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    honest = type(softmax_kernel).__name__ != "JITFunction"
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), HONEST=honest,
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
