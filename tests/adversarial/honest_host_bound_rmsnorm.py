"""Honest control: one launch of a fused residual add + RMSNorm in bf16, one program per row, written from the task
text. At M = N = 4096 the kernel takes about as long as Python and Triton's launcher take to launch it: host-bound,
which the benchmark must report, never take for tampering."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(out_ptr, x_ptr, r_ptr, w_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    inv = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * stride + offs, (h * inv * w).to(tl.bfloat16), mask=mask)


def kernel(x, r, w):
    M, N = x.shape
    y = torch.empty_like(x)
    add_rmsnorm_kernel[(M,)](y, x, r, w, N, x.stride(0), 1e-6, BLOCK=triton.next_power_of_2(N), num_warps=8)
    return y
