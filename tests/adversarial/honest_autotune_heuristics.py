"""Honest control: an autotuned softmax with a heuristics-derived block and a grid function, the launch paths whose
records the compile and run phases must agree on (the autotuner compiles
every config in one, runs one in the other)."""
import torch
import triton
import triton.language as tl


# One config: with several, the autotuner benchmarks, which needs a GPU (the CPU interpreter has no driver for it).
@triton.autotune(configs=[triton.Config({}, num_warps=8)], key=["n_cols"])
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x):
    y = torch.empty_like(x)
    softmax_kernel[lambda meta: (x.shape[0],)](y, x, x.shape[1], x.stride(0))
    return y
