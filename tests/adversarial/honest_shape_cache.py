"""Honest control: a one-time layout cache. Per row length it computes, once, the block size, the warp count and
a constant vector of log2(e) the kernel scales by (built from the shape only, never from data), and keeps them in
a module-level dict. Every call still launches the kernel on its own inputs. Must pass."""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def softmax_kernel(out_ptr, in_ptr, scale_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    scale = tl.load(scale_ptr + offs)
    e = tl.exp2((x - tl.max(x, axis=0)) * scale)
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


_plans = {}


def _plan(n_cols, device):
    key = (n_cols, str(device))
    if key not in _plans:
        block = triton.next_power_of_2(n_cols)
        _plans[key] = (block, 4 if block <= 1024 else 8, torch.full((block,), LOG2E, device=device))
    return _plans[key]


def kernel(x):
    block, warps, scale = _plan(x.shape[1], x.device)
    y = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](y, x, scale, x.shape[1], x.stride(0), BLOCK=block, num_warps=warps)
    return y
