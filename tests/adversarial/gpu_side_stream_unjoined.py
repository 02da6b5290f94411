"""Cheat (GPU): returns before its work is done. The softmax runs on a side stream, after a slow spin, and the
caller's stream is never made to wait for it: an event pair on the caller's stream times nothing, and a caller
that reads the output at once reads garbage. On a CPU it runs inline (and passes)."""
import torch
import triton
import triton.language as tl

@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def spin_kernel(scratch_ptr, iters):
    for _ in range(iters):
        tl.store(scratch_ptr, tl.load(scratch_ptr) + 1.0)


_side = {}


def kernel(x):
    y = torch.empty_like(x)
    grid = (x.shape[0],)
    block = triton.next_power_of_2(x.shape[1])
    if not x.is_cuda:
        softmax_kernel[grid](y, x, x.shape[1], x.stride(0), BLOCK=block)
        return y
    side = _side.setdefault(x.device, torch.cuda.Stream(device=x.device))
    scratch = torch.zeros(1, device=x.device)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        spin_kernel[(1,)](scratch, 20000)
        softmax_kernel[grid](y, x, x.shape[1], x.stride(0), BLOCK=block)
    return y
