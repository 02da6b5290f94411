"""Fault: the process kills itself with SIGKILL (as the OOM killer would)."""
import os
import signal

import triton
import triton.language as tl


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    os.kill(os.getpid(), signal.SIGKILL)
