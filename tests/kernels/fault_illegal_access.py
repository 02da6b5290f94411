"""Fault: an illegal memory access in the kernel itself: every program loads from a pointer a terabyte before the
input. On a GPU the launch fails with 'an illegal memory access was encountered' (and the CUDA context is lost);
the Triton interpreter on a CPU dereferences the address and dies of SIGSEGV."""
import torch
import triton
import triton.language as tl


@triton.jit
def wild_load_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr - (1 << 40) + row * n_cols + offs, mask=offs < n_cols)
    tl.store(out_ptr + row * n_cols + offs, x, mask=offs < n_cols)


def kernel(x):
    y = torch.empty_like(x)
    wild_load_kernel[(x.shape[0],)](y, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
