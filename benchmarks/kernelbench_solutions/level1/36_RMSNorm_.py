"""RMSNorm over dim 1 (the features) of a (B, F, *) tensor: x / sqrt(mean(x^2 over F) + eps). One program per
(batch, block of spatial positions), two loops over F (the sum of squares, then the output), so every load reads
contiguous spatial positions; float32 inside."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def rms_kernel(out_ptr, x_ptr, f, sp, eps, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * f * sp
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < sp
    s = tl.zeros([BLOCK], tl.float32)
    for i in range(0, f):
        x = tl.load(x_ptr + base + i * sp + cols, mask=ok, other=0.0).to(tl.float32)
        s += x * x
    inv = 1.0 / tl.sqrt(s / f + eps)
    for i in range(0, f):
        x = tl.load(x_ptr + base + i * sp + cols, mask=ok, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + i * sp + cols, (x * inv).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, F = x.shape[0], x.shape[1]
        sp = x.numel() // (B * F) if B * F else 0
        out = torch.empty_like(x)
        rms_kernel[(B, triton.cdiv(sp, BLOCK))](out, x, F, sp, float(self.eps), BLOCK=BLOCK)
        return out
