"""Attention forward in TileLang for Hopper, FlashAttention-2 style: T.gemm on wgmma, online softmax in exp2.

Why each choice:
- One block owns 128 queries of one (batch, head) on 256 threads (two warpgroups) and loops over 128-key blocks;
  q stays in shared memory for the whole loop and the S x S scores never leave the chip.
- Both products are T.gemm (wgmma on an H200: HGMMA in the SASS); GemmWarpPolicy.FullRow gives each warp whole
  rows of the score tile, so the row max and sum of the online softmax stay within a warp.
- Online softmax: a running row maximum m and sum l; when m grows, the accumulator and l are rescaled by
  exp2((m_old - m_new) * scale * log2 e) before p @ v is added. exp2 with scale and log2(e) folded into one
  multiplier: one FFMA and one MUFU per score.
- Masked scores start at -inf (causal: key > query; any: key past the sequence), never an additive -1e6 that a
  large logit survives; every query row sees key 0 in its first block, so no row's maximum stays -inf.
- Only the block that can hold a masked score is masked: with square tiles, a causal row's last key block (the
  diagonal) and the sequence's last when S is not a multiple of 128; every other block's scores start from the
  product itself (clear_accum), not from a 128 x 128 fill of zeros and a compare per score. On an H100 (2026-12-06)
  this took the kernel from 522 / 436 to 536 / 470 TFLOP/s non-causal / causal at B4 H32 S4096 D128 and from 517 / 491
  to 528 / 527 at B8 H16 S8192, in one process.
- Causal blocks stop at the diagonal: the loop runs to ceildiv((bx + 1) * 128, 128), half the FLOPs.
- Two stages: the next K and V tiles load while this block's products run.
- Built with nvcc's --use_fast_math (TileLang's `tl.enable_fast_math`): exp2f becomes one ex2.approx.ftz and the
  final 1/l one approximate division. Without it each exp2f carries its denormal range fix-up: the sm_90a SASS of the
  non-causal build has 4665 lines against 2313 (398 FFMA and 72 FSETP against 66 and 0, the 66 MUFU.EX2 alike), and the
  softmax between the two products is what the tensor cores wait for. Scores are exponentiated after the row maximum
  is taken out (every argument <= 0), so only values that underflow to 0 anyway are flushed.
"""
import functools
import math

import tilelang
import tilelang.language as T
import torch

LOG2E = 1.4426950408889634


@functools.lru_cache(maxsize=None)
def build(B: int, H: int, S: int, D: int, causal: bool, block_M: int = 128, block_N: int = 128, stages: int = 2,
          threads: int = 256, fast_math: bool = True):
    scale = LOG2E / math.sqrt(D)
    shape = (B, H, S, D)
    dtype, acc = "bfloat16", "float32"
    # Square tiles: only a causal row's last key block (its diagonal) or the sequence's last can hold a masked score.
    # Other tiles: a causal row's mask may reach back past its last block, so every block is masked.
    mask_every_block = causal and block_M != block_N

    @T.prim_func
    def attention(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                  O: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(S, block_M), H, B, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((block_M, D), dtype)
            K_s = T.alloc_shared((block_N, D), dtype)
            V_s = T.alloc_shared((block_N, D), dtype)
            s = T.alloc_fragment((block_M, block_N), acc)
            p = T.alloc_fragment((block_M, block_N), dtype)
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
            blocks = (T.min(T.ceildiv(S, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if causal
                      else T.ceildiv(S, block_N))
            for kb in T.Pipelined(blocks, num_stages=stages):
                T.copy(K[bz, by, kb * block_N:(kb + 1) * block_N, :], K_s)
                if mask_every_block or ((causal or S % block_N != 0) and kb == blocks - 1):
                    for i, j in T.Parallel(block_M, block_N):
                        key, query = kb * block_N + j, bx * block_M + i
                        masked = (key > query) | (key >= S) if causal else key >= S
                        s[i, j] = T.if_then_else(masked, -T.infinity(acc), 0)
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                else:
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_prev[i] - m[i]) * scale)
                for i, j in T.Parallel(block_M, D):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.copy(s, p)
                T.copy(V[bz, by, kb * block_N:(kb + 1) * block_N, :], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + row_sum[i]
            for i, j in T.Parallel(block_M, D):
                o[i, j] /= l[i]
            T.copy(o, O[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return tilelang.compile(attention, pass_configs={"tl.enable_fast_math": fast_math})


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    q, k, v = (t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q)
    build(B, H, S, D, bool(causal))(q, k, v, o)
    return o
