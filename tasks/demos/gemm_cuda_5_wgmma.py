"""Matrix product C = A @ B in CUDA C++ with Hopper's own path: TMA loads, wgmma (HGMMA) from shared memory, a
producer/consumer warp-specialized pipeline, and a persistent grid.

Why each choice:
- wgmma.mma_async m64n256k16 (bf16 in, fp32 accumulate): a warpgroup (128 threads) multiplies a 64 x 16 slice of
  A by a 16 x 256 slice of B straight from shared memory; each of the two consumer warpgroups owns 64 rows of the
  128 x 256 block tile, 128 fp32 accumulators a thread.
- TMA (cp.async.bulk.tensor) brings the tiles, one thread issuing them: A as one 128 x 64 box (K-major, 128-byte
  rows swizzled: the wgmma descriptor's swizzle mode 1), B as four 64 x 64 boxes (B is [K, N]: N-major, read by
  wgmma with its transpose bit). Elements past an edge arrive as zeros: no masks in the main loop.
- Four stages of 48 KiB, each with a `full` barrier (TMA's bytes landed) and an `empty` one (both consumers done
  with it): the producer warpgroup runs up to four tiles ahead of the math.
- setmaxnreg: the producer gives registers up (40) and the consumers take them (232), which the 128
  accumulators need.
- Persistent: one block per SM walks the output tiles (groups of 8 block rows, a column of them at a time, so that
  the blocks running together share A and B tiles in L2). The producer runs on into the next tile's k-tiles while
  the consumers write the last one out: the epilogue hides behind loads.
- A consumer keeps one k-tile's wgmmas in flight (wait_group 1) and hands the stage before it back, instead of
  waiting for its own products before the next tile's issue.
- Descriptors (harness context `hopper`): A K-major: SBO 1024 B (8 rows of 128 B), +32 B per k16 step; B N-major:
  LBO 8192 B (the next 64-column box), SBO 1024 B (8 rows of K), +2048 B per k16 step (16 rows of K).
- Shapes TMA cannot map (a row that is not a multiple of 16 bytes: K % 8 or N % 8) take a plain kernel.
"""
import torch

from rungs.backends.cuda_api import compile_cuda, launch, tensor_map

_ACC = 128  # fp32 accumulators per thread for m64n256
_WGMMA = (
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
    + ", ".join(f"%{i}" for i in range(_ACC))
    + f"}}, %{_ACC}, %{_ACC + 1}, 1, 1, 1, 0, 1;"
)
_OUTS = ", ".join(f'"+f"(d[{i}])' for i in range(_ACC))

SOURCE = r"""
typedef unsigned short bf16_t;
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define A_BYTES (BM * BK * 2)
#define B_BOX_BYTES (BK * 64 * 2)
#define STAGE_BYTES (A_BYTES + 4 * B_BOX_BYTES)

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ bf16_t to_bf16(float f) { bf16_t r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }
__device__ __forceinline__ float to_f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }

__device__ __forceinline__ unsigned long long descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
           ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);  // 128-byte swizzle
}
__device__ __forceinline__ void bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count));
}
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n.reg .pred done;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT_%=;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, unsigned bar, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void wgmma(float* d, unsigned long long da, unsigned long long db) {
    asm volatile("WGMMA" : OUTS : "l"(da), "l"(db));
}

__device__ __forceinline__ void tile_origin(int t, int m_blocks, int n_blocks, int& bm, int& bn) {
    // groups of 8 block rows, walked down a column of blocks first: blocks running together share A and B tiles in L2
    const int group = t / (8 * n_blocks), first = group * 8, rows = min(m_blocks - first, 8), r = t % (8 * n_blocks);
    bm = (first + r % rows) * BM;
    bn = (r / rows) * BN;
}

extern "C" __global__ void __launch_bounds__(384, 1) gemm_wgmma(bf16_t* __restrict__ c,
        const __grid_constant__ TensorMap a_map, const __grid_constant__ TensorMap b_map, int M, int N, int K) {
    extern __shared__ __align__(1024) unsigned char raw[];
    const unsigned base = smem_u32(raw), pad = (1024 - (base & 1023)) & 1023;  // 1024-byte aligned tiles
    const unsigned tiles = base + pad;
    const unsigned full = tiles + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int k_tiles = (K + BK - 1) / BK, m_blocks = (M + BM - 1) / BM, n_blocks = (N + BN - 1) / BN;
    const int tiles_total = m_blocks * n_blocks;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) { bar_init(full + 8 * s, 1); bar_init(empty + 8 * s, 2); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {  // producer: runs up to STAGES k-tiles ahead, across tile boundaries too
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles_total; t += gridDim.x) {
                int bm, bn;
                tile_origin(t, m_blocks, n_blocks, bm, bn);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) bar_wait(empty + 8 * s, ((it / STAGES) - 1) & 1);
                    const unsigned a_tile = tiles + s * STAGE_BYTES, b_tile = a_tile + A_BYTES;
                    bar_expect(full + 8 * s, STAGE_BYTES);
                    tma_load(a_tile, &a_map, full + 8 * s, kt * BK, bm);
                    for (int j = 0; j < 4; ++j)
                        tma_load(b_tile + j * B_BOX_BYTES, &b_map, full + 8 * s, bn + 64 * j, kt * BK);
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = wg - 1;  // this consumer's 64 rows of the block tile
    const int warp = tid / 32, lane = tid % 32;
    float d[ACC];
    int it = 0;
    for (int t = blockIdx.x; t < tiles_total; t += gridDim.x) {
        int bm, bn;
        tile_origin(t, m_blocks, n_blocks, bm, bn);
        #pragma unroll
        for (int i = 0; i < ACC; ++i) d[i] = 0.f;
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            bar_wait(full + 8 * s, (it / STAGES) & 1);
            const unsigned a_tile = tiles + s * STAGE_BYTES + half * 64 * 128, b_tile = tiles + s * STAGE_BYTES + A_BYTES;
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            #pragma unroll
            for (int k = 0; k < BK / 16; ++k)
                wgmma(d, descriptor(a_tile + 32 * k, 16, 1024), descriptor(b_tile + 2048 * k, B_BOX_BYTES, 1024));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            // keep this k-tile's products in flight; the previous one's are done: its stage goes back
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            if (kt > 0 && tid == 0) bar_arrive(empty + 8 * ((it - 1) % STAGES));
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (tid == 0) bar_arrive(empty + 8 * ((it - 1) % STAGES));
        // the epilogue: the producer is already loading this block's next tile meanwhile
        #pragma unroll
        for (int i = 0; i < ACC; i += 2) {  // the m64nN accumulator layout: a pair of adjacent columns per register pair
            const int row = bm + half * 64 + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
            const int col = bn + 8 * (i / 4) + 2 * (lane % 4);
            if (row < M && col < N)  // N % 8 == 0 here: the pair is in bounds together and 4-byte aligned
                *reinterpret_cast<unsigned*>(c + (size_t)row * N + col) =
                    (unsigned)to_bf16(d[i]) | ((unsigned)to_bf16(d[i + 1]) << 16);
        }
    }
}

extern "C" __global__ void gemm_plain(bf16_t* c, const bf16_t* a, const bf16_t* b, int M, int N, int K) {
    const int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= N) return;
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += to_f32(a[(size_t)row * K + k]) * to_f32(b[(size_t)k * N + col]);
    c[(size_t)row * N + col] = to_bf16(s);
}
""".replace('"WGMMA"', '"' + _WGMMA + '"').replace("OUTS", _OUTS).replace("ACC", str(_ACC))

_wgmma = compile_cuda(SOURCE, "gemm_wgmma")
_plain = compile_cuda(SOURCE, "gemm_plain")
SHARED_BYTES = 4 * (128 * 64 + 4 * 64 * 64) * 2 + 1024 + 64  # four stages, the alignment pad, the barriers


_SMS: dict = {}


def _sms(device: torch.device) -> int:
    """The GPU's SM count, asked once (get_device_properties costs about 20 us of host time a call)."""
    if device not in _SMS:
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132
    return _SMS[device]


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if K % 8 == 0 and N % 8 == 0:  # every row a whole number of 16-byte chunks: TMA maps both operands
        tiles = -(-N // 256) * -(-M // 128)  # a persistent grid: one block per SM walks the tiles
        sms = _sms(a.device)
        launch(_wgmma, grid=(min(tiles, sms),), block=(384,), shared_bytes=SHARED_BYTES,
               args=(c, tensor_map(a, (128, 64)), tensor_map(b, (64, 64)), M, N, K))
    else:
        launch(_plain, grid=(-(-N // 128), M), block=(128,), args=(c, a, b, M, N, K))
    return c
