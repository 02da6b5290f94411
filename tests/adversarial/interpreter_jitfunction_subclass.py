"""Red team 2026-12-06 (third round): a JITFunction subclass whose __call__ the interpreter runs and the compiler does not, passed as a constexpr. Right in the interpreter, softmax of x / 2
in the sm_90a build; a CPU pass before the launch gate judged a jit class and what a library object holds by where
the code lives."""
import torch
import triton
import triton.language as tl
from triton.runtime.jit import JITFunction


def halve(a, b):
    return b


class Pick(JITFunction):
    def __call__(self, a, b):
        return a


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr, PICK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = PICK(x, x * 0.5)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N), PICK=Pick(halve))
    return y
