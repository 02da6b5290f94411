"""Fault: the process leaves through os._exit(0), skipping every handler."""
import os

import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    os._exit(0)
