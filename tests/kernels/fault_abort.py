"""Fault: the process aborts (os.abort(), as a failed assertion in native code would): SIGABRT."""
import os

import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    os.abort()
