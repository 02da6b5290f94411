"""Fault: the entry never returns (an infinite loop on the host)."""
import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    while True:
        pass
