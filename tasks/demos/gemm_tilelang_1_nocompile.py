"""Matrix product C = A @ B in TileLang, first try: shared-memory tiles and T.gemm.

Does not compile: B's tile is declared [block_N, block_K] (as if B were stored transposed), but it is copied from
a [K, N] tensor and multiplied as [block_K, block_N]; T.copy and T.gemm reject the mismatched shapes.
"""
import functools

import tilelang
import tilelang.language as T
import torch


@functools.lru_cache(maxsize=None)
def build(M: int, N: int, K: int, block_M: int = 64, block_N: int = 64, block_K: int = 32, stages: int = 2,
          threads: int = 128):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "bfloat16")
            B_shared = T.alloc_shared((block_N, block_K), "bfloat16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return tilelang.compile(gemm)


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    build(M, N, K)(a, b, c)
    return c
