"""Attention forward in TileLang for Hopper (flash_attn_tilelang_4_fast.py, as it is: the masked block only, fast
math), with timing sections marked around the QK^T product, the online softmax update and the PV product, for the
sections step (issue 23).

The markers (rungs/backends/tilelang_sections.py) add no statement to the timed build: it is the unmarked demo's
(tests/test_tilelang_backend.py compares the generated CUDA). In the sections step's instrumented build each region
is timed per warp with the SM's cycle counter and the global timer.
"""
import functools
import math

import tilelang
import tilelang.language as T
import torch

from rungs.backends.tilelang_sections import section_begin, section_end

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
                    section_begin("qk")
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    section_end("qk")
                else:
                    section_begin("qk")
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
                    section_end("qk")
                section_begin("softmax")
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2((m_prev[i] - m[i]) * scale)
                for i, j in T.Parallel(block_M, D):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.copy(s, p)
                section_end("softmax")
                T.copy(V[bz, by, kb * block_N:(kb + 1) * block_N, :], V_s)
                section_begin("pv")
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
                section_end("pv")
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
