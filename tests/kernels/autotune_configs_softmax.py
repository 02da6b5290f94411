"""Row softmax with a declared config space (CONFIGS): three passes over the row in blocks of BLOCK columns
(maximum, sum of exponentials, write), so every block size is correct on every row length. The harness calls
kernel(x, **CONFIGS[k]); CONFIGS[0] is the default a CPU's interpreter runs."""
import torch
import triton
import triton.language as tl

CONFIGS = [dict(BLOCK=b, num_warps=w) for b in (2048, 1024, 512, 256) for w in (4, 2)]


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
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
