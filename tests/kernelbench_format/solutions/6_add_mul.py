"""a * b + c on three tensors in one pass (an fma per element): three reads and one write."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma_kernel(out_ptr, a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = a.numel()
        fma_kernel[(triton.cdiv(n, 1024),)](out, a, b, c, n, BLOCK=1024)
        return out
