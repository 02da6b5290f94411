"""Row softmax with a declared config space whose CONFIGS[1] is past what its own guard allows: a row block of 8192
trips `tl.static_assert` (a CompileTimeAssertionFailure, which triton.autotune prunes as it prunes ptxas running out
of registers). The harness drops that point, says so, and judges the others as ever; the default alone compiles."""
import torch
import triton
import triton.language as tl

CONFIGS = [dict(BLOCK=1024), dict(BLOCK=8192), dict(BLOCK=256, num_warps=2)]


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 4096, "a row block past 4096 columns spills")
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    src = in_ptr + row * in_stride
    mx = tl.max(tl.load(src + offs, mask=offs < n_cols, other=-float("inf")), axis=0)
    for start in range(BLOCK, n_cols, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, axis=0))
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        total += tl.sum(tl.exp(x - mx), axis=0)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * out_stride + start + offs, tl.exp(x - mx) / total, mask=start + offs < n_cols)


def kernel(x: torch.Tensor, BLOCK: int = 1024, num_warps: int = 4) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=BLOCK, num_warps=num_warps)
    return y
