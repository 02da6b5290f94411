"""Cheat on the no-launch probe: a sentinel kernel tells whether launches run; when they do not (the probe), the
entry raises instead of returning an output that would show it computes elsewhere. Raising used to count as a
launcher that needs its launches."""
import torch
import triton
import triton.language as tl


@triton.jit
def sentinel_kernel(flag_ptr):
    tl.store(flag_ptr, 1.0)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x):
    flag = torch.zeros(1, device=x.device)
    launched = sentinel_kernel[(1,)](flag)
    if launched is None and flag.item() == 0.0:  # the compile phase returns a compiled kernel without running it
        raise RuntimeError("launch failed")
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
