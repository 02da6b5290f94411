"""Matrix product C = A @ B in CUDA C++, second try: shared-memory tiles and fp32 FMAs.

Compiles, but wrong whenever K is not a multiple of the 16-wide K tile: the loop stops at (K / 16) * 16, so the
last partial tile is never added. 256 x 256 x 256 comes out right, which is how the bug hides; K = 65 drops one
term of every dot product, and K = 1 returns all zeros. The loop must run over every tile with the tail masked.
"""
import torch

from rungs.backends.cuda_api import compile_cuda, launch

SOURCE = r"""
// C = A @ B, bf16 in, fp32 accumulate, bf16 out; any M, N, K. 64x64 tiles, 256 threads, 4x4 outputs per thread.
typedef unsigned short bf16_t;
__device__ __forceinline__ float bf16_to_f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
    bf16_t r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}

#define S_BM 64
#define S_BN 64
#define S_BK 16
extern "C" __global__ void __launch_bounds__(256) gemm_simt(bf16_t* __restrict__ c, const bf16_t* __restrict__ a,
                                                           const bf16_t* __restrict__ b, int M, int N, int K) {
    __shared__ float As[S_BK][S_BM + 4];  // k-major, so a thread reads 4 consecutive rows of A as one float4
    __shared__ float Bs[S_BK][S_BN];
    const int tid = threadIdx.x, tr = tid / 16, tc = tid % 16;
    const int bm = blockIdx.y * S_BM, bn = blockIdx.x * S_BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < (K / S_BK) * S_BK; k0 += S_BK) {
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            int e = tid + i * 256;
            int ar = e / S_BK, ak = e % S_BK;  // A tile: 64 rows x 16 k
            int gm = bm + ar, gk = k0 + ak;
            As[ak][ar] = (gm < M && gk < K) ? bf16_to_f32(a[(size_t)gm * K + gk]) : 0.f;
            int bk = e / S_BN, bc = e % S_BN;  // B tile: 16 k x 64 cols
            int gk2 = k0 + bk, gn = bn + bc;
            Bs[bk][bc] = (gk2 < K && gn < N) ? bf16_to_f32(b[(size_t)gk2 * N + gn]) : 0.f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < S_BK; ++k) {
            float av[4], bv[4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) { av[i] = As[k][tr * 4 + i]; bv[i] = Bs[k][tc + 16 * i]; }
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            int gm = bm + tr * 4 + i, gn = bn + tc + 16 * j;  // columns strided by 16: coalesced stores
            if (gm < M && gn < N) c[(size_t)gm * N + gn] = f32_to_bf16(acc[i][j]);
        }
}
"""

_simt = compile_cuda(SOURCE, "gemm_simt")


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    launch(_simt, grid=(-(-N // 64), -(-M // 64)), block=(256,), args=(c, a, b, M, N, K))
    return c
