"""Fault: the entry never returns, asleep rather than spinning: the limit must stop a hang that uses no CPU as
surely as one that does (fault_hang.py)."""
import time

import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    while True:
        time.sleep(60)  # the worker waits here, using no CPU
