"""Red team of 2026-12-07: a fused multiply-add through a splat. `a * a` is a scalar, splat over the block before the subtract;
the sm_90a build still emits fma.rn.f32 (one rounding: corr = 2**-24), and the interpreter, whose product marker the
splat dropped, rounded twice (corr = 0): this softmax scaled its row by 1 here and by 0.5 on an H100 (max abs error
1.2e-3 to 1.6e-1). The product now keeps its operands through splat, broadcast, expand_dims, reshape, trans, fneg."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    nf = tl.full((), 1.0, tl.float64) * n_cols
    a = 1.0 + 2.0**-12 * (nf / nf).to(tl.float32)
    corr = a * a - tl.full([BLOCK], 1.0 + 2.0**-11, tl.float32)
    x = x * (1.0 - corr * 2.0**23)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
