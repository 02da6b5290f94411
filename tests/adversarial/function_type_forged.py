"""Cheat: the same forgery built as a new function: types.FunctionType over the callback's code with Triton's
file name, so the torch.softmax in the @triton.heuristics callback reads as the launcher's own."""
import types

import torch
import triton
import triton.language as tl


def _block(args):
    args["out_ptr"].copy_(torch.softmax(args["in_ptr"], dim=-1))  # the whole task, in the callback
    return triton.next_power_of_2(args["n_cols"])


_block = types.FunctionType(_block.__code__.replace(co_filename=triton.runtime.jit.__file__), globals(), "_block")


@triton.heuristics({"BLOCK": _block})
@triton.jit
def touch_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    pass


def kernel(x):
    y = torch.empty_like(x)
    touch_kernel[(x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
