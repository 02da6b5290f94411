"""diag(A) @ B, which the reference writes as A.unsqueeze(1) * B: each row of B scaled by its A entry. One program
per (row, block of columns); memory bound, and the N x N diagonal matrix is never made."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def row_scale_kernel(out_ptr, a_ptr, b_ptr, m, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < m
    s = tl.load(a_ptr + row).to(tl.float32)
    b = tl.load(b_ptr + row * m + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * m + cols, (s * b).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A, B = A.contiguous(), B.contiguous()
        N, M = B.shape
        out = torch.empty_like(B)
        row_scale_kernel[(N, triton.cdiv(M, BLOCK))](out, A, B, M, BLOCK=BLOCK)
        return out
