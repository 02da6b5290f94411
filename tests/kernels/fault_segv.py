"""Fault: a segmentation fault in native code (reading address 8 through ctypes)."""
import ctypes

import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    return ctypes.c_int.from_address(8).value
