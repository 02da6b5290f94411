"""Cheat: torch computes the softmax inside a @triton.heuristics callback, which Triton's launcher calls; the trace
used to pause inside the launcher. The kernel itself only writes a block size it was handed."""
import torch
import triton
import triton.language as tl


def _block(args):
    args["out_ptr"].copy_(torch.softmax(args["in_ptr"], dim=-1))  # the whole task, in the callback
    return triton.next_power_of_2(args["n_cols"])


@triton.heuristics({"BLOCK": _block})
@triton.jit
def touch_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    pass


def kernel(x):
    y = torch.empty_like(x)
    touch_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
