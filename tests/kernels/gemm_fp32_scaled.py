"""A float32 gemm (exact products: input_precision "ieee") whose output is scaled by a value it loads from memory:
its tiles come in through 16-byte cp.async copies (LDGSTS.128) where the shape allows, the scale through one 4-byte
LDG. The dumps' 16-byte check counts every load kind, so the one narrow LDG beside the wide copies is not flagged;
at a shape whose sizes are not multiples of 16 no load can be 16 bytes, and the dumps say it is the shape's doing."""
import torch
import triton
import triton.language as tl


@triton.jit
def gemm_scaled_kernel(a_ptr, b_ptr, c_ptr, scale_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    acc = acc * tl.load(scale_ptr)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def kernel(a, b):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    scale = torch.ones(1, dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    gemm_scaled_kernel[grid](a.contiguous(), b.contiguous(), c, scale, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c
