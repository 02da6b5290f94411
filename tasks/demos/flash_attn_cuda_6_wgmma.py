"""Attention forward in CUDA C++ on Hopper's own path: TMA loads, wgmma for both products, a producer warp and two
consumer warpgroups (FlashAttention-3's shape, without its overlaps: flash_attn_cuda_7_overlap adds them; the two
are the transcript's iterations 5 and 6). On the H200 through the whole ladder (`harness check
tasks/flash_attn_cuda.yaml` with this file): 581.96 TFLOP/s over both bench shapes, 75.7% of the roofline. Beside
cuDNN (`python3 benchmarks/attention_vs_cudnn.py`, 4 x 32 x 4096 x 128): 579 against 623 TFLOP/s (0.93x), causal
499 against 562 (0.89x).

Why each choice:
- A block owns 128 queries of one (batch, head): consumer warpgroups 1 and 2 take 64 rows each (one m64 wgmma
  slab), warpgroup 0 is the producer (one thread issues every TMA load; setmaxnreg gives its registers away).
- Q, K and V are read as 3-D tensors [B*H, S, D] through TMA with 128-byte swizzle, in boxes 64 wide along D
  (128 bytes): Q once (64 x 64 boxes), K and V per key block of 128 (128 x 64 boxes). Rows past S arrive as zeros
  and never cross into the next head.
- S = Q K^T is an SS wgmma m64n128k16 (both K-major: no transpose), D / 16 steps. O += P V is an RS wgmma
  m64nDk16: P from registers (the accumulator layout of S is the A-fragment layout, as in FlashAttention-2), V from
  shared memory, MN-major (imm-trans-b = 1; LBO = the bytes between 64-wide D chunks, SBO = 8 key rows).
- Online softmax on the accumulators: each thread holds 2 rows; row max and sum over the 4 lanes of a quad (two
  shuffles); exp2 with 1/sqrt(D) * log2(e) folded into one multiplier; sums combined across the quad once, at the end.
- K and V of the next key block load while this one is multiplied (two stages, `full` barriers for K and V apart so
  S can start before V lands, an `empty` one both consumers release).
- Causal: key blocks past the diagonal are skipped, only blocks that cross the diagonal or S are masked (to -inf;
  key 0 is in every row's first block, so no row maximum stays -inf), and the longest query blocks launch first.
- Head dims other than 64 and 128 (the tests' 32) take a plain kernel, one warp per query row.
What is left for FA3's figures: ping-pong between the two consumer warpgroups (named barriers) so one's softmax runs
under the other's wgmma, and issuing the next block's S before this block's softmax.
"""
import math

import torch

from rungs.backends.cuda_api import compile_cuda, launch, tensor_map

LOG2E = 1.4426950408889634
BM, BN = 128, 128  # queries per block (two consumer warpgroups of 64), keys per key block


def _wgmma(n: int, a_regs: bool, trans_b: int) -> str:
    """The wgmma instruction m64n{n}k16 bf16 -> f32, operands numbered after its n/2 accumulators."""
    acc = n // 2
    d = ", ".join(f"%{i}" for i in range(acc))
    if a_regs:
        return (f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{d}}}, "
                f"{{%{acc}, %{acc + 1}, %{acc + 2}, %{acc + 3}}}, %{acc + 4}, 1, 1, 1, {trans_b};")
    return f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{d}}}, %{acc}, %{acc + 1}, 1, 1, 1, 0, {trans_b};"


def _outs(n: int, name: str) -> str:
    return ", ".join(f'"+f"({name}[{i}])' for i in range(n // 2))


SOURCE = r"""
typedef unsigned short bf16_t;
struct __align__(64) TensorMap { unsigned long long opaque[16]; };
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ float to_f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float exp2f_(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned short a, b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(a) : "f"(lo));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(hi));
    return (unsigned)a | ((unsigned)b << 16);
}
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
__device__ __forceinline__ void tma_load3(unsigned dst, const TensorMap* map, unsigned bar, int x, int y, int z) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}
__device__ __forceinline__ void wgmma_qk(float* s, unsigned long long dq, unsigned long long dk) {
    asm volatile("WGMMA_QK" : OUTS_S : "l"(dq), "l"(dk));
}
__device__ __forceinline__ void wgmma_pv(float* o, const unsigned* p, unsigned long long dv) {
    asm volatile("WGMMA_PV" : OUTS_O : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(dv));
}
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit_and_wait() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

#define D HEAD_DIM
#define BM 128                       // queries per block: two consumer warpgroups of 64 rows
#define BN 128                       // keys per key block
#define DC (D / 64)                  // 64-wide chunks of D: one TMA box (128 bytes a row) each
#define Q_BOX 8192                   // 64 rows x 128 B
#define KV_BOX 16384                 // 128 rows x 128 B
#define Q_BYTES (2 * DC * Q_BOX)
#define K_BYTES (DC * KV_BOX)
#define STAGE_BYTES (2 * K_BYTES)    // K, then V

extern "C" __global__ void __launch_bounds__(384, 1) NAME(bf16_t* __restrict__ out,
        const __grid_constant__ TensorMap q_map, const __grid_constant__ TensorMap k_map,
        const __grid_constant__ TensorMap v_map, int S, int causal, float scale_log2) {
    extern __shared__ __align__(1024) unsigned char raw[];
    const unsigned base = smem_u32(raw), pad = (1024 - (base & 1023)) & 1023;
    const unsigned q_smem = base + pad, stages = q_smem + Q_BYTES;
    const unsigned bars = stages + 2 * STAGE_BYTES;  // q_full, k_full[2], v_full[2], empty[2]
    const unsigned q_full = bars, k_full = bars + 8, v_full = bars + 24, empty = bars + 40;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int bh = blockIdx.y, qb = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x, q0 = qb * BM;
    const int kb_all = (S + BN - 1) / BN;
    const int kb = causal ? min(kb_all, (q0 + BM - 1) / BN + 1) : kb_all;
    if (threadIdx.x == 0) {
        bar_init(q_full, 1);
        for (int s = 0; s < 2; ++s) { bar_init(k_full + 8 * s, 1); bar_init(v_full + 8 * s, 1); bar_init(empty + 8 * s, 2); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {  // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            bar_expect(q_full, Q_BYTES);
            for (int h = 0; h < 2; ++h)
                for (int c = 0; c < DC; ++c)
                    tma_load3(q_smem + (h * DC + c) * Q_BOX, &q_map, q_full, 64 * c, q0 + 64 * h, bh);
            for (int j = 0; j < kb; ++j) {
                const int s = j % 2;
                if (j >= 2) bar_wait(empty + 8 * s, ((j / 2) - 1) & 1);
                const unsigned k_tile = stages + s * STAGE_BYTES, v_tile = k_tile + K_BYTES;
                bar_expect(k_full + 8 * s, K_BYTES);
                for (int c = 0; c < DC; ++c) tma_load3(k_tile + c * KV_BOX, &k_map, k_full + 8 * s, 64 * c, j * BN, bh);
                bar_expect(v_full + 8 * s, K_BYTES);
                for (int c = 0; c < DC; ++c) tma_load3(v_tile + c * KV_BOX, &v_map, v_full + 8 * s, 64 * c, j * BN, bh);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int h = wg - 1, warp = tid / 32, lane = tid % 32;
    const int row0 = q0 + 64 * h + 16 * warp + lane / 4;  // this thread's rows: row0 and row0 + 8
    float o[D / 2];
    #pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};
    bar_wait(q_full, 0);
    for (int j = 0; j < kb; ++j) {
        const int s = j % 2;
        const unsigned parity = (j / 2) & 1, k_tile = stages + s * STAGE_BYTES, v_tile = k_tile + K_BYTES;
        float sc[BN / 2];
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) sc[i] = 0.f;
        bar_wait(k_full + 8 * s, parity);
        fence();
        #pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            wgmma_qk(sc, descriptor(q_smem + (h * DC + kk / 4) * Q_BOX + 32 * (kk % 4), 16, 1024),
                     descriptor(k_tile + (kk / 4) * KV_BOX + 32 * (kk % 4), 16, 1024));
        commit_and_wait();
        const int key0 = j * BN;
        if (key0 + BN > S || (causal && key0 + BN - 1 > q0 + 64 * h)) {  // a block that crosses S or the diagonal
            #pragma unroll
            for (int i = 0; i < BN / 2; ++i) {
                const int key = key0 + 8 * (i / 4) + 2 * (lane % 4) + (i % 2), row = row0 + 8 * ((i / 2) % 2);
                if (key >= S || (causal && key > row)) sc[i] = NEG_INF;
            }
        }
        float alpha[2];
        #pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = NEG_INF;
            #pragma unroll
            for (int i = 0; i < BN / 2; ++i)
                if ((i / 2) % 2 == r) mx = fmaxf(mx, sc[i]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[r], mx * scale_log2);
            alpha[r] = exp2f_(m[r] - m_new);
            m[r] = m_new;
            l[r] *= alpha[r];
        }
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) {
            const int r = (i / 2) % 2;
            sc[i] = exp2f_(sc[i] * scale_log2 - m[r]);
            l[r] += sc[i];
        }
        #pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i / 2) % 2];
        unsigned p[BN / 16][4];  // P as the A fragments of each 16-key step
        #pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk)
            #pragma unroll
            for (int e = 0; e < 4; ++e) p[kk][e] = pack_bf16(sc[8 * kk + 2 * e], sc[8 * kk + 2 * e + 1]);
        bar_wait(v_full + 8 * s, parity);
        fence();
        #pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk)
            wgmma_pv(o, p[kk], descriptor(v_tile + 2048 * kk, KV_BOX, 1024));
        commit_and_wait();
        if (tid == 0) bar_arrive(empty + 8 * s);
    }
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        l[r] = 1.f / l[r];
    }
    bf16_t* o_head = out + (size_t)bh * S * D;
    #pragma unroll
    for (int i = 0; i < D / 2; i += 2) {
        const int r = (i / 2) % 2, row = row0 + 8 * r, col = 8 * (i / 4) + 2 * (lane % 4);
        if (row < S)
            *reinterpret_cast<unsigned*>(o_head + (size_t)row * D + col) = pack_bf16(o[i] * l[r], o[i + 1] * l[r]);
    }
}
"""

PLAIN = r"""
typedef unsigned short bf16_t;
__device__ __forceinline__ float to_f32(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ float exp2f_(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ bf16_t to_bf16(float f) { bf16_t r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return r; }

// One warp per query row, D <= 256: each lane owns D / 32 columns of q and of the output.
extern "C" __global__ void attention_plain(bf16_t* out, const bf16_t* q, const bf16_t* k, const bf16_t* v, int S,
                                           int D, int causal, float scale_log2) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const size_t head = (size_t)blockIdx.y * S * D;
    float qv[8], acc[8];
    #pragma unroll
    for (int t = 0; t < 8; ++t) {
        const int d = lane + 32 * t;
        qv[t] = d < D ? to_f32(q[head + (size_t)row * D + d]) : 0.f;
        acc[t] = 0.f;
    }
    float m = __int_as_float(0xff800000), l = 0.f;
    const int last = causal ? row : S - 1;
    for (int j = 0; j <= last; ++j) {
        float part = 0.f;
        #pragma unroll
        for (int t = 0; t < 8; ++t) {
            const int d = lane + 32 * t;
            if (d < D) part += qv[t] * to_f32(k[head + (size_t)j * D + d]);
        }
        for (int off = 16; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
        const float s = part * scale_log2, m_new = fmaxf(m, s), alpha = exp2f_(m - m_new), p = exp2f_(s - m_new);
        l = l * alpha + p;
        #pragma unroll
        for (int t = 0; t < 8; ++t) {
            const int d = lane + 32 * t;
            if (d < D) acc[t] = acc[t] * alpha + p * to_f32(v[head + (size_t)j * D + d]);
        }
        m = m_new;
    }
    #pragma unroll
    for (int t = 0; t < 8; ++t) {
        const int d = lane + 32 * t;
        if (d < D) out[head + (size_t)row * D + d] = to_bf16(acc[t] / l);
    }
}
"""


def _source(d: int) -> str:
    return (SOURCE.replace('"WGMMA_QK"', '"' + _wgmma(BN, False, 0) + '"')
            .replace('"WGMMA_PV"', '"' + _wgmma(d, True, 1) + '"')
            .replace("OUTS_S", _outs(BN, "s")).replace("OUTS_O", _outs(d, "o"))
            .replace("HEAD_DIM", str(d)).replace("NAME", f"attention_wgmma_d{d}"))


_WGMMA = {d: compile_cuda(_source(d), f"attention_wgmma_d{d}") for d in (64, 128)}
_PLAIN = compile_cuda(PLAIN, "attention_plain")


def _shared_bytes(d: int) -> int:
    chunks = d // 64
    return 1024 + 2 * chunks * 8192 + 2 * 2 * chunks * 16384 + 64  # the alignment pad, Q, two stages of K and V, barriers


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    q, k, v = (t.contiguous() for t in (q, k, v))
    out = torch.empty_like(q)
    scale_log2 = LOG2E / math.sqrt(D)
    if D in _WGMMA:
        q3, k3, v3 = (t.view(B * H, S, D) for t in (q, k, v))
        launch(_WGMMA[D], grid=(-(-S // BM), B * H), block=(384,), shared_bytes=_shared_bytes(D),
               args=(out, tensor_map(q3, (1, 64, 64)), tensor_map(k3, (1, BN, 64)), tensor_map(v3, (1, BN, 64)), S,
                     int(bool(causal)), scale_log2))
    elif D <= 256:
        launch(_PLAIN, grid=(S, B * H), block=(32,), args=(out, q, k, v, S, D, int(bool(causal)), scale_log2))
    else:
        raise ValueError(f"head dim {D}: this kernel is built for head dims up to 256")
    return out
