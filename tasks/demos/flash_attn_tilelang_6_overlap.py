"""Attention forward in TileLang for Hopper with FlashAttention-3's overlap inside each warpgroup: block kb's
S = Q K^T and block kb-1's O += P V are issued together as asynchronous wgmma, and block kb's softmax runs while
P V is on the tensor cores.

What changed from flash_attn_tilelang_4_fast (T.gemm waits for each product at once: S, its softmax, then P V, the
tensor cores idle through every softmax):
- T.wgmma_gemm issues without waiting; T.wait_wgmma(1) waits for S alone (P V of the block before still runs),
  T.wait_wgmma(0) for P V at the end of the iteration.
- Nothing after the softmax needs P V's result, so nothing pulls that wait up above the softmax (it did in the first
  version, where ptxas scheduled O's rescale among the exp2s and the wait moved up with it): O is rescaled by the
  previous block's factor before the next P V is issued (FlashAttention-3's order; o / l at the end takes the last
  factor), and block kb's P goes to the other half of a double buffer in shared memory (P_s[kb % 2]) than the one
  block kb-1's P V reads.
- The loop runs one iteration more than there are key blocks: iteration kb issues S of block kb and P V of block
  kb - 1, so the first P V reads P = 0 (nothing added) and the last S is all masked (its P is 0, its factor 1): one
  key block of both products more per query block (about 3% more FLOPs at 32 key blocks, about 6% causal, where a
  query block has 16 on average) for a loop with no branch around a wgmma.
- The pipeline hands a K or V stage back to the TMA producer after the last statement that reads it, and a wgmma
  that is only issued has not read it yet: each stage is read once more (one element a thread, `touch`) after the
  wait that ends its wgmma, K after wait(1), V after wait(0). V is also read before S is issued, so the wait for V's
  stage comes before both issues rather than between them.
SASS at the bench shapes (built for sm_90a on a CPU): non-causal, both products issued, `WARPGROUP.DEPBAR.LE gsb0,
0x1`, the 66 exp2s, then `0x0`; causal, ptxas waits for S before issuing P V and runs 49 of the exp2s among P V's
HGMMAs and 17 after them. Kept: 128 x 128 tiles on 256 threads (two warpgroups), GemmWarpPolicy.FullRow, exp2 with
scale and log2(e) folded, masked scores at -inf, causal loops stopping at the diagonal, two stages, TMA and warp
specialization (TileLang's).
Measured on an H100 (2026-12-05, `bash benchmarks/gpu_session.sh frontier-tilelang`): right (`harness check`: pass,
30 cases) but slower than flash_attn_tilelang_4_fast: 419.8 / 345.1 TFLOP/s non-causal / causal at 4x32x4096x128
against _4's 526.2 / 442.4 and cuDNN's 667.7 / 572.7 in the same process; 51.6% of the roofline, ncu latency-bound
(SM 45%, top stall long_scoreboard). Kept as a worked negative result, not in the transcript.
"""
import functools
import math

import tilelang
import tilelang.language as T
import torch

LOG2E = 1.4426950408889634


@functools.lru_cache(maxsize=None)
def build(B: int, H: int, S: int, D: int, causal: bool, block_M: int = 128, block_N: int = 128, stages: int = 2,
          threads: int = 256):
    scale = LOG2E / math.sqrt(D)
    shape = (B, H, S, D)
    dtype, acc = "bfloat16", "float32"

    @T.prim_func
    def attention(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                  O: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(S, block_M), H, B, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((block_M, D), dtype)
            K_s = T.alloc_shared((block_N, D), dtype)
            V_s = T.alloc_shared((block_N, D), dtype)
            s = T.alloc_fragment((block_M, block_N), acc)
            P_s = T.alloc_shared((2, block_M, block_N), dtype)  # block kb's P in kb % 2, beside kb - 1's being read
            o = T.alloc_fragment((block_M, D), acc)
            m = T.alloc_fragment((block_M,), acc)
            m_prev = T.alloc_fragment((block_M,), acc)
            alpha = T.alloc_fragment((block_M,), acc)
            row_sum = T.alloc_fragment((block_M,), acc)
            l = T.alloc_fragment((block_M,), acc)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity(acc))
            T.fill(alpha, 1)
            blocks = (T.min(T.ceildiv(S, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if causal
                      else T.ceildiv(S, block_N))
            for i, j in T.Parallel(block_M, block_N):  # the P the first P V reads: 0
                P_s[1, i, j] = T.cast(0, dtype)
            touch = T.alloc_fragment((block_M,), acc)  # reads of K_s and V_s after their wgmma has been waited for
            # Iteration kb issues S of block kb and P V of block kb - 1 together and runs block kb's softmax under that
            # P V. One iteration more than there are blocks: the first P V has p = 0, the last S is all masked.
            for kb in T.Pipelined(blocks + 1, num_stages=stages):
                T.copy(K[bz, by, kb * block_N:(kb + 1) * block_N, :], K_s)
                T.copy(V[bz, by, T.max(kb - 1, 0) * block_N:(T.max(kb - 1, 0) + 1) * block_N, :], V_s)
                for i, j in T.Parallel(block_M, block_N):
                    key, query = kb * block_N + j, bx * block_M + i
                    masked = (key > query) | (key >= S) if causal else key >= S
                    s[i, j] = T.if_then_else(masked, -T.infinity(acc), 0)
                for i, j in T.Parallel(block_M, D):  # FlashAttention-3's order: O rescaled before its next P V
                    o[i, j] *= alpha[i]
                for i in T.Parallel(block_M):  # V_s read before S is issued: its wait lands before both issues
                    touch[i] = V_s[i % block_N, 1]
                T.wgmma_gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.wgmma_gemm(P_s[(kb + 1) % 2, :, :], V_s, o, policy=T.GemmWarpPolicy.FullRow)
                T.wait_wgmma(1)  # S of kb is done; P V of kb - 1 still runs
                for i in T.Parallel(block_M):  # K_s read here: the pipeline hands it back only now
                    touch[i] = K_s[i % block_N, 0]
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_prev[i] - m[i]) * scale)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + row_sum[i]
                T.copy(s, P_s[kb % 2, :, :])  # the other buffer than the one P V of kb - 1 reads
                T.wait_wgmma(0)  # P V of kb - 1 has landed
                for i in T.Parallel(block_M):  # V_s read here: handed back only now
                    touch[i] = touch[i] + V_s[i % block_N, 0]
            for i, j in T.Parallel(block_M, D):
                o[i, j] = o[i, j] * alpha[i] / l[i]
            T.copy(o, O[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return tilelang.compile(attention)


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q)
    build(B, H, S, D, bool(causal))(q, k, v, o)
    return o
