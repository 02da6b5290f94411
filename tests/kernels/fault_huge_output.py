"""Fault: returns an output of a trillion elements (a broadcast view of one number): copying it back to be judged
would take terabytes. It must be refused by size before it is copied or saved."""
import torch
import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    unused[(1,)](x)
    return torch.zeros(1, device=x.device).expand(1 << 20, 1 << 20)
