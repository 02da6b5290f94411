"""Row softmax: one program per row, in blocks of columns (an online max and sum, then a second pass that
writes), so rows of any length fit."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < n_cols, other=float("-inf"))
        new_m = tl.maximum(m, x)
        # a lane that has seen only padding keeps m = -inf: exp(-inf - -inf) would be NaN, so its scale is 0
        alpha = tl.where(new_m == float("-inf"), 0.0, tl.exp(m - new_m))
        s = s * alpha + tl.where(x == float("-inf"), 0.0, tl.exp(x - new_m))
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < n_cols, other=float("-inf"))
        tl.store(out_ptr + row * stride + offs, tl.exp(x - row_max) / total, mask=offs < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.shape[1], x.stride(0), BLOCK=128)
        return out
