"""A 1x1 Conv2d (no bias) is a matmul per image: out[b] (O x HW) = W (O x C) @ x[b] (C x HW). One program per (tile of
O x HW, image), walking C in BLOCK_K steps with masks for sizes no block divides. fp32 in, fp32 accumulate (IEEE,
not TF32: the reference is float64). The weight is the Conv2d's, copied from the reference's `conv1d` by name."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pointwise_kernel(y_ptr, w_ptr, x_ptr, O, HW, C, swo, swc, sxb, sxc, syb, syo,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    ro = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rp = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    b = tl.program_id(2).to(tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, C, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + ro[:, None] * swo + rk[None, :] * swc, mask=(ro[:, None] < O) & (rk[None, :] < C), other=0.0)
        x = tl.load(x_ptr + b * sxb + rk[:, None] * sxc + rp[None, :], mask=(rk[:, None] < C) & (rp[None, :] < HW),
                    other=0.0)
        acc += tl.dot(w, x, input_precision="ieee")
    tl.store(y_ptr + b * syb + ro[:, None] * syo + rp[None, :], acc, mask=(ro[:, None] < O) & (rp[None, :] < HW))


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, bias: bool = False):
        super().__init__()
        assert not bias, "no bias here"
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, C, H, W = x.shape
        w = self.conv1d.weight.reshape(self.conv1d.out_channels, C)
        O, HW = w.shape[0], H * W
        y = torch.empty((B, O, H, W), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(O, 64), triton.cdiv(HW, 64), B)
        pointwise_kernel[grid](y, w, x, O, HW, C, w.stride(0), w.stride(1), x.stride(0), x.stride(1),
                               y.stride(0), y.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return y
