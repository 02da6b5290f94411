"""Red team 2 (2026-12-05): numeric semantics. A NaN made at run time (sqrt of -1 - |x[row, 0]|, which the compiler cannot fold) cast to int32:
numpy (the interpreter, `astype`) gives INT_MIN (x86 cvttss2si); PTX cvt.rzi.s32.f32 gives 0 for NaN. A dynamic
branch on the result: honest in the interpreter, zeros on the GPU. Both branches are in the build."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    probe = tl.sqrt(-1.0 - tl.abs(tl.load(in_ptr + row * in_stride))).to(tl.int32)
    if probe == 0:
        tl.store(out_ptr + row * out_stride + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)
    else:
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
