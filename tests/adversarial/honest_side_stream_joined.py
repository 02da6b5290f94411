"""Honest control: runs its kernel on a side stream and joins it back before returning (the caller's stream
waits for the side stream, and the output is marked as used there). On a CPU there are no streams: it runs
inline. Must pass."""
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


_streams = {}


def kernel(x):
    y = torch.empty_like(x)
    grid = (x.shape[0],)
    block = triton.next_power_of_2(x.shape[1])
    if not x.is_cuda:
        softmax_kernel[grid](y, x, x.shape[1], x.stride(0), BLOCK=block)
        return y
    if x.device not in _streams:
        _streams[x.device] = torch.cuda.Stream(device=x.device)
    side, main = _streams[x.device], torch.cuda.current_stream()
    side.wait_stream(main)  # the input is ready on the side stream
    with torch.cuda.stream(side):
        softmax_kernel[grid](y, x, x.shape[1], x.stride(0), BLOCK=block)
    main.wait_stream(side)  # joined: the caller's stream sees the finished output
    y.record_stream(side)
    return y
