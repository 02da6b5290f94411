"""C = A @ B with TMA tile loads (tests/test_cuda_backend.py: a TMA descriptor reaches a CUDA C++ kernel as a
`const __grid_constant__` parameter, and the build has UTMALDG). A plain version: 64 x 64 tiles of A and B land in
shared memory through cp.async.bulk.tensor and one mbarrier, then SIMT FMAs; no pipelining, no wgmma. Shapes TMA
cannot map (a row not a multiple of 16 bytes) take an untiled kernel. Compile-checked on a CPU; not run on a GPU
by any test."""
import torch

from rungs.backends.cuda_api import compile_cuda, launch, tensor_map

SOURCE = r"""
typedef unsigned short bf16_t;
struct __align__(64) TensorMap { unsigned long long opaque[16]; };
__device__ __forceinline__ float f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ bf16_t bf16(float f) { bf16_t r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

extern "C" __global__ void __launch_bounds__(256) gemm_tma(bf16_t* c, const __grid_constant__ TensorMap a_map,
                                                         const __grid_constant__ TensorMap b_map, int M, int N, int K) {
    __shared__ __align__(128) bf16_t a[64 * 64];  // rows of A (M) x 64 of K
    __shared__ __align__(128) bf16_t b[64 * 64];  // rows of B (K) x 64 of N
    __shared__ __align__(8) unsigned long long bar;
    const int bm = blockIdx.y * 64, bn = blockIdx.x * 64, t = threadIdx.x;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&bar)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    float acc[16] = {};
    unsigned phase = 0;
    for (int k0 = 0; k0 < K; k0 += 64) {
        if (t == 0) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(&bar)), "r"(2 * 64 * 64 * 2) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem(a)), "l"(&a_map), "r"(k0), "r"(bm), "r"(smem(&bar)) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                         :: "r"(smem(b)), "l"(&b_map), "r"(bn), "r"(k0), "r"(smem(&bar)) : "memory");
        }
        asm volatile("{\n.reg .pred done;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n@!done bra WAIT_%=;\n}\n"
                     :: "r"(smem(&bar)), "r"(phase) : "memory");
        phase ^= 1;
        for (int k = 0; k < 64; ++k)
            for (int i = 0; i < 16; ++i) {
                int e = t + 256 * i, r = e / 64, col = e % 64;
                acc[i] += f32(a[r * 64 + k]) * f32(b[k * 64 + col]);
            }
        __syncthreads();  // every thread is done with the tiles before the next load overwrites them
    }
    for (int i = 0; i < 16; ++i) {
        int e = t + 256 * i, r = bm + e / 64, col = bn + e % 64;
        if (r < M && col < N) c[(size_t)r * N + col] = bf16(acc[i]);
    }
}

extern "C" __global__ void gemm_plain(bf16_t* c, const bf16_t* a, const bf16_t* b, int M, int N, int K) {
    int r = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= N) return;
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += f32(a[(size_t)r * K + k]) * f32(b[(size_t)k * N + col]);
    c[(size_t)r * N + col] = bf16(s);
}
"""

_tma = compile_cuda(SOURCE, "gemm_tma")
_plain = compile_cuda(SOURCE, "gemm_plain")


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    if K % 8 == 0 and N % 8 == 0:  # rows of whole 16-byte chunks: TMA can map both
        launch(_tma, grid=(-(-N // 64), -(-M // 64)), block=(256,),
               args=(c, tensor_map(a, (64, 64), swizzle=0), tensor_map(b, (64, 64), swizzle=0), M, N, K))
    else:
        launch(_plain, grid=(-(-N // 128), M), block=(128,), args=(c, a, b, M, N, K))
    return c
