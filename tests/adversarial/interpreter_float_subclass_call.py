"""Red team 2026-12-07: a float subclass with a __call__ of the file's own, passed as a constexpr and called from the
jit body: `isinstance(value, float)` logged it as a number. Right in the interpreter, softmax of x / 2 in the sm_90a
build; a CPU pass before the launch gate took only the types on its list (rungs/worker/launch_args.py)."""
import torch
import triton
import triton.language as tl


class Half(float):
    def __call__(self, a, b):
        if "TensorHandle" in type(a.handle).__name__:
            return a
        return b


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr, C: tl.constexpr):
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
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N), C=Half(1.0))
    return y
