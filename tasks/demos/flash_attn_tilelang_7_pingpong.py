"""Attention forward in TileLang for Hopper with FlashAttention-3's ping-pong: the two consumer warpgroups take turns
on the tensor cores, so one's softmax runs while the other's products do.

What changed from flash_attn_tilelang_4_fast (same tiles, masks, fast math and pipeline): there both warpgroups wait on
the same K stage, so they run in step: both issue S = Q K^T, both wait for it, both run the softmax while the tensor
cores have nothing to do, both issue P V. Here each warpgroup waits for its turn (`bar.sync` on its own named barrier,
10 or 11, with the other warpgroup's 128 arrivals) before it issues S, and hands the turn over (`bar.arrive` on the
other's barrier) once S has landed: the other warpgroup's S then runs under this one's softmax, and this one's P V
under the other's softmax. With `pv_turns` P V is taken in turns too (S0, S1, PV0, PV1, ... on the tensor cores).
- The turns are named barriers (16 per CTA; TileLang's own code here uses barrier 0 and mbarriers). The second
  warpgroup arrives once before its first turn, so the first goes first; after the loop the first warpgroup waits
  once more, for the second's last hand-over: every arrival is matched by a wait and no barrier is left half-arrived
  when the CTA ends. Each warpgroup waits and arrives the same number of times whatever the branch (the masked
  block's branch holds its own turn), since both run the same key blocks.
- The wait is `T.call_extern("handle", "tl::__sync_thread_partial", ...)` (TileLang's own bar.sync helper), not
  `T.sync_threads(id, count)`: TileLang 0.1.15's warp specialization gives that storage sync to the producer
  warpgroup, where it would wait for arrivals that never come. `T.named_barrier_arrive` stays with the consumers.
- The thread index is `T.get_thread_binding(0)`, which the warp specialization renumbers for the consumers (0-255),
  so `tx // 128` is the consumer warpgroup (its SASS holds both barrier numbers as registers: ptxas then reserves all
  16 barriers, which costs nothing at one CTA a SM).
Built for sm_90a on a CPU (2026-12-07): 168 registers as _4, no local memory. Not yet timed on a GPU: no device machine
could be had in the session that wrote it. `TL_PICK=none TL_PINGPONG=1 TL7_CHECK=1 bash benchmarks/gpu_session.sh
frontier-tilelang` (after `park`) times it and its `pv_turns` copy beside _4 and cuDNN, then judges it with `harness
check tasks/flash_attn_tilelang.yaml tasks/demos/flash_attn_tilelang_7_pingpong.py`.
"""
import functools
import math

import tilelang
import tilelang.language as T
import torch

LOG2E = 1.4426950408889634
TURN = 10
"""The first consumer warpgroup's named barrier; the second's is TURN + 1."""


def wait_turn(barrier):
    """bar.sync: this warpgroup's 128 threads and the other warpgroup's 128 arrivals."""
    return T.call_extern("handle", "tl::__sync_thread_partial", barrier, 256)


def give_turn(barrier):
    """bar.arrive on the other warpgroup's barrier, without waiting."""
    return T.named_barrier_arrive(barrier, 256)


@functools.lru_cache(maxsize=None)
def build(B: int, H: int, S: int, D: int, causal: bool, block_M: int = 128, block_N: int = 128, stages: int = 2,
          threads: int = 256, fast_math: bool = True,
          pv_turns: bool = False):
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
            tx = T.get_thread_binding(0)  # 0-255 in the consumer warpgroups
            mine, other = TURN + tx // 128, TURN + 1 - tx // 128
            blocks = (T.min(T.ceildiv(S, block_N), T.ceildiv((bx + 1) * block_M, block_N)) if causal
                      else T.ceildiv(S, block_N))
            for kb in T.Pipelined(blocks, num_stages=stages):
                T.copy(K[bz, by, kb * block_N:(kb + 1) * block_N, :], K_s)
                if mask_every_block or ((causal or S % block_N != 0) and kb == blocks - 1):
                    for i, j in T.Parallel(block_M, block_N):
                        key, query = kb * block_N + j, bx * block_M + i
                        masked = (key > query) | (key >= S) if causal else key >= S
                        s[i, j] = T.if_then_else(masked, -T.infinity(acc), 0)
                    if kb == 0 and tx >= 128:  # the second warpgroup lets the first go first
                        give_turn(TURN)
                    wait_turn(mine)
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                else:
                    if kb == 0 and tx >= 128:  # the second warpgroup lets the first go first
                        give_turn(TURN)
                    wait_turn(mine)
                    T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
                give_turn(other)  # S has landed: the other warpgroup's products run under this softmax
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
                if pv_turns:
                    wait_turn(mine)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
                if pv_turns:
                    give_turn(other)
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + row_sum[i]
            if tx < 128:  # the second warpgroup's last hand-over
                wait_turn(TURN)
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
