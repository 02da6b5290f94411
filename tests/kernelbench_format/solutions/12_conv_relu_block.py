"""Conv (odd kernel, same padding) + ReLU + 2x2 max pool in one kernel: one program per (image, output channel,
block of pooled pixels); each pooled pixel computes its four conv outputs directly and keeps the largest.
ReLU then max equals the max started at zero, so the pre-pool activations never reach memory. A direct
convolution (no implicit GEMM): small and clear, not fast."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_relu_pool_kernel(y_ptr, x_ptr, w_ptr, b_ptr, C, H, W, OC, PH, PW,
                          KS: tl.constexpr, PAD: tl.constexpr, BLOCK: tl.constexpr):
    n = tl.program_id(0)
    oc = tl.program_id(1)
    p = tl.program_id(2) * BLOCK + tl.arange(0, BLOCK)
    pmask = p < PH * PW
    ph = p // PW
    pw = p % PW
    bias = tl.load(b_ptr + oc)
    best = tl.zeros([BLOCK], tl.float32)
    for d in tl.static_range(4):
        oh = 2 * ph + d // 2
        ow = 2 * pw + d % 2
        acc = tl.zeros([BLOCK], tl.float32)
        for c in range(0, C):
            for kh in tl.static_range(KS):
                for kw in tl.static_range(KS):
                    ih = oh + kh - PAD
                    iw = ow + kw - PAD
                    m = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                    xv = tl.load(x_ptr + ((n * C + c) * H + ih) * W + iw, mask=m, other=0.0)
                    acc += xv * tl.load(w_ptr + ((oc * C + c) * KS + kh) * KS + kw)
        best = tl.maximum(best, acc + bias)
    tl.store(y_ptr + (n * OC + oc) * PH * PW + p, best, mask=pmask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        assert kernel_size % 2 == 1, "same padding needs an odd kernel"
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N, C, H, W = x.shape
        OC, KS = self.conv.out_channels, self.conv.kernel_size[0]
        PH, PW = H // 2, W // 2
        y = torch.empty((N, OC, PH, PW), dtype=x.dtype, device=x.device)
        grid = (N, OC, triton.cdiv(PH * PW, 64))
        conv_relu_pool_kernel[grid](y, x, self.conv.weight, self.conv.bias, C, H, W, OC, PH, PW,
                                    KS=KS, PAD=KS // 2, BLOCK=64)
        return y
