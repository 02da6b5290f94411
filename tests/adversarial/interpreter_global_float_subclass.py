"""The same float subclass as interpreter_float_subclass_call.py, read by the jit body as a module-level constexpr:
the screen refuses the call; past it, the launch gate judges what a jit body reads from its globals as it judges
an argument."""
import torch
import triton
import triton.language as tl


class Half(float):
    def __call__(self, a, b):
        if "TensorHandle" in type(a.handle).__name__:
            return a
        return b


C = tl.constexpr(Half(1.0))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = C(x, x * 0.5)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
