"""Red team 4 (2026-12-05): FP contraction. The sandbox sets TRITON_DEFAULT_FP_FUSION=1, so the sm_90a build contracts `a * b + c`
into one `fma.rn.f32` (rounded once); the interpreter multiplies and adds in numpy (rounded twice). With
x = 1 + 2^-12 (made at run time), x*x = 1 + 2^-11 + 2^-24 rounds (tie to even) to 1 + 2^-11, so x*x - (1 + 2^-11) is 0
interpreted and 2^-24 fused. Branch on it."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = 1.000244140625 + 0.0 * tl.load(in_ptr + row * in_stride)   # 1 + 2^-12
    probe = x * x - 1.00048828125                                    # - (1 + 2^-11)
    if probe != 0.0:
        tl.store(out_ptr + row * out_stride + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)
    else:
        v = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
