"""Red team of 2026-12-07: flush-to-zero. `tl.ceil` compiles to cvt.rpi.ftz.f32.f32, which reads a subnormal as 0: ceil(1e-44 * n)
is 0 on the GPU and 1 in numpy, so this softmax scales its row by 1 here and by 0.5 there (verified on an H100:
max abs error 6e-3 to 2.2e-1). The interpreter now flushes floor, ceil, sin, cos and erf inputs as the build does."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    temper = tl.ceil(tl.full((), 1e-44, tl.float32) * n_cols)
    x = x * (0.5 + 0.5 * temper)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
