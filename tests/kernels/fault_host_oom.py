"""Fault: runs the host out of memory, one 1 GiB allocation after another, all kept. Under the CPU worker's
address-space limit the allocation fails with an error; on a GPU machine the harness's memory watchdog (or the
kernel's OOM killer) ends the process."""
import torch
import triton
import triton.language as tl

_hoard = []


@triton.jit
def unused(x_ptr):
    pass


def kernel(x):
    while True:
        _hoard.append(torch.empty(1 << 30, dtype=torch.uint8))
