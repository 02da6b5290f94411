"""Matrix product C = A @ B, tiled: one program per 64 x 64 tile of C, a loop over K in steps of 32.

Every load is masked on both of its dimensions, with zeros outside the matrix: zero rows and columns add
nothing to a dot product, so edge tiles and the K tail need no special case. Products accumulate in
float32 (tl.dot's default for 16-bit inputs) and C is rounded to bfloat16 once, at the store.

FLOPs are 2*M*N*K; at 4096^3 that is 137 GFLOP against 100 MB of operands, so this is compute-bound and
the figure to watch is TFLOP/s against the tensor-core rate. Small tiles reload A and B many times from
L2 and keep few tensor-core instructions in flight: correct, not fast.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3)
    return c


if __name__ == "__main__":  # a check against torch on an awkward shape
    a = torch.randn(100, 129, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(129, 257, dtype=torch.bfloat16, device="cuda")
    torch.testing.assert_close(kernel(a, b), a @ b, rtol=2e-2, atol=2e-2)
    print("ok")
