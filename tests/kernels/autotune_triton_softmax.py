"""Row softmax autotuned with Triton's own decorator over 8 configs (block size, warps): the harness pins the
autotuner to one config at a time, so Triton's timing loop never runs in the worker. Two passes over the row in
blocks of BLOCK columns: a running maximum with its rescaled sum of exponentials, then the write; every block size is
correct on every row length."""
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (2048, 1024, 512, 256) for w in (4, 2)],
                 key=["n_cols"])
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    first = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
    running_max = tl.max(first, axis=0)
    running_sum = tl.sum(tl.exp(first - running_max), axis=0)
    for base in range(BLOCK, n_cols, BLOCK):
        chunk = tl.load(in_ptr + row * in_stride + base + cols, mask=base + cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(running_max, tl.max(chunk, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(chunk - new_max), axis=0)
        running_max = new_max
    for base in range(0, n_cols, BLOCK):
        chunk = tl.load(in_ptr + row * in_stride + base + cols, mask=base + cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * out_stride + base + cols, tl.exp(chunk - running_max) / running_sum,
                 mask=base + cols < n_cols)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0))
    return y
