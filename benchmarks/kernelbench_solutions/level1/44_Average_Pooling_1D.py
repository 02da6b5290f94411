"""AvgPool1d (kernel_size, stride, padding; padding counted, as count_include_pad's default does) over the last
dimension of a (B, C, L) tensor: one program per (row, block of outputs), the KS taps summed in float32 with the
padding as zeros, divided by KS."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def avgpool1d_kernel(out_ptr, x_ptr, length, out_length, stride, padding, KS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = j < out_length
    total = tl.zeros([BLOCK], tl.float32)
    for i in tl.static_range(KS):
        pos = j * stride - padding + i
        inside = ok & (pos >= 0) & (pos < length)
        total += tl.load(x_ptr + row * length + pos, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_length + j, (total / KS).to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.k, self.s, self.p = kernel_size, stride or kernel_size, padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        *lead, length = x.shape
        out_length = (length + 2 * self.p - self.k) // self.s + 1
        out = torch.empty((*lead, out_length), dtype=x.dtype, device=x.device)
        rows = x.numel() // length if length else 0
        avgpool1d_kernel[(rows, triton.cdiv(out_length, BLOCK))](out, x, length, out_length, self.s, self.p,
                                                                 KS=self.k, BLOCK=BLOCK)
        return out
