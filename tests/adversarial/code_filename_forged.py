"""Cheat: the torch.softmax in its @triton.heuristics callback is passed off as Triton's own code: the callback's
code object is given co_filename = triton/runtime/jit.py, so no frame of the candidate's file sits between the op
and the launcher and the trace lets it through."""
import torch
import triton
import triton.language as tl


def _block(args):
    args["out_ptr"].copy_(torch.softmax(args["in_ptr"], dim=-1))  # the whole task, in the callback
    return triton.next_power_of_2(args["n_cols"])


_block.__code__ = _block.__code__.replace(co_filename=triton.runtime.jit.__file__)


@triton.heuristics({"BLOCK": _block})
@triton.jit
def touch_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    pass


def kernel(x):
    y = torch.empty_like(x)
    touch_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
