"""Fault: the entry raises a Python exception after launching nothing."""
import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    raise ValueError("this kernel raises on purpose")
