"""Matrix product C = A @ B in CUDA C++ for Hopper without wgmma: mma.sync tensor cores fed by a cp.async pipeline.

Why each choice:
- Tensor cores through `mma.sync.m16n8k16` (bf16 in, fp32 accumulate; HMMA in the SASS). wgmma would be faster
  on an H200 but needs TMA descriptors and warpgroup choreography; mma.sync reaches well over half of it.
- 128 x 128 tiles per 256-thread block, 2 x 4 warps of 64 x 32 each: 16 MMAs per 16-deep k step per warp, and
  every A fragment is used 4 times, every B fragment 4 times, from registers.
- A three-stage cp.async pipeline (48 KiB of shared memory): tiles k+1 and k+2 are in flight while tile k is
  multiplied; cp.async copies global to shared without a register round trip, and zero-fills chunks past an edge.
- ldmatrix (and ldmatrix.trans for row-major B) loads fragments; a XOR swizzle of the 16-byte chunks keeps the 8
  rows one ldmatrix reads in 8 different bank groups (no bank conflicts).
- Results are narrowed to bf16 in registers and stored in pairs (4 bytes).
- The tensor-core path needs 16-byte chunks wholly in or out of bounds: K % 8 == 0 and N % 8 == 0 (the bench
  shapes). Other shapes take the tiled FMA kernel of the previous version.
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
    for (int k0 = 0; k0 < K; k0 += S_BK) {
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

// The tensor-core path: M, N, K with K % 8 == 0 and N % 8 == 0 (every 16-byte chunk is wholly in or out).
#define BM 128
#define BN 128
#define BK 32
#define STAGES 3
#define THREADS 256
#define A_STAGE (BM * BK)
#define B_STAGE (BK * BN)

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool in_bounds) {
    // src-size 0 zero-fills the chunk: tiles past the matrix's edge add nothing
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(in_bounds ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }

// Swizzles: a 16-byte chunk's column is XORed with bits of its row, so the 8 rows one ldmatrix reads fall in 8
// different bank groups. A rows are 64 bytes (4 chunks), B rows 256 bytes (16 chunks).
__device__ __forceinline__ int a_offset(int row, int chunk) { return row * BK + ((chunk ^ ((row >> 1) & 3)) * 8); }
__device__ __forceinline__ int b_offset(int row, int chunk) { return row * BN + ((chunk ^ (row & 7)) * 8); }

__device__ __forceinline__ void load_tile(bf16_t* As, bf16_t* Bs, const bf16_t* a, const bf16_t* b,
                                          int M, int N, int K, int bm, int bn, int k0) {
    const int tid = threadIdx.x;
    #pragma unroll
    for (int i = 0; i < 2; ++i) {  // A: 128 rows x 4 chunks
        int id = tid + i * THREADS, row = id / 4, chunk = id % 4;
        int gm = bm + row, gk = k0 + chunk * 8;
        bool ok = gm < M && gk < K;
        cp_async16(smem_addr(As + a_offset(row, chunk)), ok ? a + (size_t)gm * K + gk : a, ok);
    }
    #pragma unroll
    for (int i = 0; i < 2; ++i) {  // B: 32 rows x 16 chunks
        int id = tid + i * THREADS, row = id / 16, chunk = id % 16;
        int gk = k0 + row, gn = bn + chunk * 8;
        bool ok = gk < K && gn < N;
        cp_async16(smem_addr(Bs + b_offset(row, chunk)), ok ? b + (size_t)gk * N + gn : b, ok);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) gemm_mma(bf16_t* __restrict__ c, const bf16_t* __restrict__ a,
                                                              const bf16_t* __restrict__ b, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    bf16_t* As = reinterpret_cast<bf16_t*>(smem);
    bf16_t* Bs = As + STAGES * A_STAGE;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int warp_m = warp / 4, warp_n = warp % 4;  // 2 x 4 warps, each 64 x 32 of the 128 x 128 tile
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int k_tiles = (K + BK - 1) / BK;
    float acc[4][4][4] = {};

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_tile(As + s * A_STAGE, Bs + s * B_STAGE, a, b, M, N, K, bm, bn, s * BK);
        cp_async_commit();  // an empty group too: the wait below counts groups
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();  // tile kt has landed
        __syncthreads();              // ... for every thread, and every warp is done with the stage refilled next
        int next = kt + STAGES - 1;
        if (next < k_tiles)
            load_tile(As + (next % STAGES) * A_STAGE, Bs + (next % STAGES) * B_STAGE, a, b, M, N, K, bm, bn, next * BK);
        cp_async_commit();
        const bf16_t* At = As + (kt % STAGES) * A_STAGE;
        const bf16_t* Bt = Bs + (kt % STAGES) * B_STAGE;
        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[4][4], bfr[4][2];
            #pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
                int row = warp_m * 64 + mi * 16 + lane % 16, chunk = kk / 8 + lane / 16;
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3])
                             : "r"(smem_addr(At + a_offset(row, chunk))));
            }
            #pragma unroll
            for (int nj = 0; nj < 2; ++nj) {  // one x4.trans load: two n8 tiles, both k halves
                int g = lane / 8, row = kk + lane % 8 + (g & 1) * 8;
                int chunk = (warp_n * 32 + nj * 16) / 8 + (g >> 1);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                             : "=r"(bfr[2 * nj][0]), "=r"(bfr[2 * nj][1]), "=r"(bfr[2 * nj + 1][0]), "=r"(bfr[2 * nj + 1][1])
                             : "r"(smem_addr(Bt + b_offset(row, chunk))));
            }
            #pragma unroll
            for (int mi = 0; mi < 4; ++mi)
                #pragma unroll
                for (int ni = 0; ni < 4; ++ni) {
                    float* d = acc[mi][ni];
                    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                                 : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]),
                                   "r"(bfr[ni][0]), "r"(bfr[ni][1]));
                }
        }
    }
    cp_async_wait<0>();
    #pragma unroll
    for (int mi = 0; mi < 4; ++mi)
        #pragma unroll
        for (int ni = 0; ni < 4; ++ni)
            #pragma unroll
            for (int h = 0; h < 2; ++h) {  // rows lane/4 and lane/4 + 8 of the 16 x 8 tile
                int gm = bm + warp_m * 64 + mi * 16 + lane / 4 + h * 8;
                int gn = bn + warp_n * 32 + ni * 8 + (lane % 4) * 2;
                if (gm < M && gn < N) {  // N % 8 == 0: the pair is in bounds together, and 4-byte aligned
                    unsigned pair = (unsigned)f32_to_bf16(acc[mi][ni][2 * h]) |
                                    ((unsigned)f32_to_bf16(acc[mi][ni][2 * h + 1]) << 16);
                    *reinterpret_cast<unsigned*>(c + (size_t)gm * N + gn) = pair;
                }
            }
}
"""

_simt = compile_cuda(SOURCE, "gemm_simt")
_mma = compile_cuda(SOURCE, "gemm_mma")
SHARED_BYTES = 3 * (128 * 32 + 32 * 128) * 2


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if K % 8 == 0 and N % 8 == 0:
        launch(_mma, grid=(-(-N // 128), -(-M // 128)), block=(256,), args=(c, a, b, M, N, K),
               shared_bytes=SHARED_BYTES)
    else:
        launch(_simt, grid=(-(-N // 64), -(-M // 64)), block=(256,), args=(c, a, b, M, N, K))
    return c
