"""relu(x @ W^T + b) with one K block of 256 and no loop over K: right wherever in_features <= 256 (every shrunk
test shape), wrong past it (a red team's class: a matmul that never loops over K passed on the CPU)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(y_ptr, x_ptr, w_ptr, b_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
    w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
    acc = tl.dot(x, w, input_precision="ieee") + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], tl.maximum(acc, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.out_features
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        linear_relu_kernel[grid](y, x, self.linear.weight, self.linear.bias, M, N, K, BLOCK_M=32, BLOCK_N=64, BLOCK_K=256)
        return y
