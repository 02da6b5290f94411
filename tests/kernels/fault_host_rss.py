"""Fault: fills host memory 256 MiB at a time (touched, so it is resident), slowly enough for the harness's
memory watchdog to see it grow: the watchdog kills the process tree at its limit."""
import time

import torch
import triton
import triton.language as tl

_hoard = []


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    for _ in range(64):
        _hoard.append(torch.ones(1 << 28, dtype=torch.uint8))
        time.sleep(0.05)
    return x
