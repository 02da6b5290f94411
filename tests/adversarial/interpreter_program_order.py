"""Red team (2026-12-05): an inter-program race the interpreter cannot show. Program (r, 0) writes row r's max and sum to a
scratch buffer; program (r, 1) reads them and normalizes. No barrier orders them on a GPU (programs of one launch run
in any order, concurrently); the interpreter runs (r, 0) before (r, 1) every time."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stats_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    if part == 0:
        m = tl.max(x, axis=0)
        s = tl.sum(tl.exp(x - m), axis=0)
        tl.store(stats_ptr + 2 * row, m)
        tl.store(stats_ptr + 2 * row + 1, s)
    else:
        m = tl.load(stats_ptr + 2 * row)
        s = tl.load(stats_ptr + 2 * row + 1)
        tl.store(out_ptr + row * out_stride + offs, tl.exp(x - m) / s, mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    stats = torch.empty(2 * M, dtype=torch.float32, device=x.device)
    softmax_kernel[(M, 2)](y, x, stats, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
