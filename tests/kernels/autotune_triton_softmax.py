"""Row softmax autotuned with Triton's own decorator over 8 configs (block size, warps): the harness pins the
autotuner to one config at a time, so Triton's timing loop never runs in the worker. The same three-pass kernel as
autotune_configs_softmax.py: every block size is correct on every row length."""
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (2048, 1024, 512, 256) for w in (4, 2)],
                 key=["n_cols"])
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


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0))
    return y
