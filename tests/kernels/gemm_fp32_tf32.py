"""A float32 gemm whose tl.dot keeps Triton's default input_precision: TF32 on the GPU (HGMMA ...F32.TF32 in the
sm_90a SASS), so it misses a float32 tolerance by TF32's rounding (rel_l2 about 3e-4). PRECISION is the one line a
test changes to "ieee" for the exact version."""
import torch
import triton
import triton.language as tl

PRECISION = None  # tl.dot's default: "tf32" on an NVIDIA GPU


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def kernel(a, b):
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    gemm_kernel[grid](a.contiguous(), b.contiguous(), c, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                      PRECISION=PRECISION)
    return c
