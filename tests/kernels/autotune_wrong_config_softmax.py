"""Wrong on purpose in one config: CONFIGS[2] (FULL=False) reads only the first block of each row, so it is by far the
fastest and computes a wrong softmax. On a GPU it wins the autotune and the judged build fails correctness, naming it;
the other configs are right. On a CPU the default (FULL=True) is the one interpreted, and passes."""
import torch
import triton
import triton.language as tl

CONFIGS = [dict(BLOCK=1024, FULL=True, num_warps=4), dict(BLOCK=512, FULL=True, num_warps=4),
           dict(BLOCK=1024, FULL=False, num_warps=4), dict(BLOCK=2048, FULL=True, num_warps=8)]


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr, FULL: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    src = in_ptr + row * in_stride
    end = n_cols if FULL else BLOCK
    mx = tl.max(tl.load(src + offs, mask=offs < n_cols, other=-float("inf")), axis=0)
    for start in range(BLOCK, end, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, axis=0))
    total = 0.0
    for start in range(0, end, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        total += tl.sum(tl.exp(x - mx), axis=0)
    for start in range(0, end, BLOCK):
        x = tl.load(src + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * out_stride + start + offs, tl.exp(x - mx) / total, mask=start + offs < n_cols)


def kernel(x: torch.Tensor, BLOCK: int = 1024, FULL: bool = True, num_warps: int = 4) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=BLOCK, FULL=FULL, num_warps=num_warps)
    return y
