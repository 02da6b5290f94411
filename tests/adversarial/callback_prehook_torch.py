"""Cheat: torch computes the softmax in an autotune Config pre_hook, which the autotuner calls inside Triton's
launcher, where the trace used to pause."""
import torch
import triton
import triton.language as tl


def _hook(nargs):
    nargs["out_ptr"].copy_(torch.softmax(nargs["in_ptr"], dim=-1))


@triton.autotune(configs=[triton.Config({"BLOCK": 16}, pre_hook=_hook)], key=["n_cols"])
@triton.jit
def touch_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    pass


def kernel(x):
    y = torch.empty_like(x)
    touch_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
