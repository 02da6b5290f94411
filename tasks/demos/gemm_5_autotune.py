"""Matrix product C = A @ B for Hopper, with its tile configuration autotuned by the harness over 10 configs.

The kernel is gemm_4_grouped's (grouped launch order, indices wrapped modulo M and N so A and B loads need no mask,
only the K tail masked). What changes is who picks the tile: instead of one fixed 128 x 256 x 64 / 8 warps /
4 stages choice, `CONFIGS` below declares the space and the harness times every config at the bench shapes on the
GPU (the same timing as the judged build), keeps the fastest over 4096^3 + 8192^3, and judges that one on every
correctness case. The entry takes each key as a keyword argument: the harness calls kernel(a, b, **CONFIGS[k]).
CONFIGS[0], gemm_4's tile, is the default: what a CPU's interpreter runs.

The space: 128 x 256 and 256 x 128 tiles with two warpgroups (8 warps) at 3 and 4 stages (4 x 48 KB of shared
memory is under Hopper's 227 KB), 128 x 128 at 4 and 8 warps, 64 x 256, a BLOCK_K of 128 at 3 stages, and GROUP_M 8
against 16. FLOPs 2*M*N*K; cuBLAS reaches about 785 and 692 TFLOP/s at 4096^3 and 8192^3 on an H200.
"""
import torch
import triton
import triton.language as tl


def _tile(bm: int, bn: int, bk: int, group: int, warps: int, stages: int) -> dict:
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, num_warps=warps, num_stages=stages)


CONFIGS = [
    _tile(128, 256, 64, 16, 8, 4),
    _tile(128, 256, 64, 16, 8, 3),
    _tile(128, 256, 64, 8, 8, 4),
    _tile(256, 128, 64, 16, 8, 4),
    _tile(256, 128, 64, 16, 8, 3),
    _tile(128, 128, 64, 8, 4, 4),
    _tile(128, 128, 64, 8, 8, 5),
    _tile(64, 256, 64, 8, 4, 4),
    _tile(128, 256, 128, 16, 8, 3),
    _tile(128, 128, 128, 8, 8, 3),
]


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, c,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def kernel(a: torch.Tensor, b: torch.Tensor, BLOCK_M: int = 128, BLOCK_N: int = 256, BLOCK_K: int = 64,
           GROUP_M: int = 16, num_warps: int = 8, num_stages: int = 4) -> torch.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        GROUP_M=GROUP_M, EVEN_K=K % BLOCK_K == 0, num_warps=num_warps, num_stages=num_stages)
    return c


if __name__ == "__main__":  # a check against torch on an awkward shape with every config
    a = torch.randn(1000, 1029, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(1029, 2047, dtype=torch.bfloat16, device="cuda")
    for config in CONFIGS:
        torch.testing.assert_close(kernel(a, b, **config), a @ b, rtol=2e-2, atol=5e-2)
