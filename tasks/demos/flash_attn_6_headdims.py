"""Attention forward at any head dim from 16 to 256: flash_attn_4_fa2's kernel, its tile chosen by the harness.

flash_attn_4_fa2 fixes one tile (128 queries x 64 keys, 8 warps, 3 stages), measured at head dim 128. At other head
dims the best tile moves: at 64 the products are half as long, so a larger key block (or more queries per program)
keeps the tensor cores fed for the same shared memory; at 256 the q block alone is 64 KB of shared memory and the
fp32 accumulator 128 registers a thread over two warpgroups, so 3 stages of 64-key K and V tiles (3 x 64 KB) no
longer fit Hopper's 227 KB and the key block must shrink to 32 or the stages to 2. Rather than guess, `CONFIGS`
declares the space and the harness times every point at the bench shapes on the GPU (the judged build's own timing),
keeps the fastest over both masks, and judges that one on every correctness case; a point that does not fit
(out of shared memory) raises there and cannot win. The entry takes each key as a keyword argument
(kernel(q, k, v, causal, **CONFIGS[k])); CONFIGS[0], flash_attn_4_fa2's tile, is the default a CPU's interpreter
runs.

The kernel itself is flash_attn_4_fa2's (exp2 with the scale folded in, unmasked blocks in a loop of their own,
the causal diagonal masked, longest causal programs first). FLOPs: 4*B*H*S*S*D, half when causal. Not yet timed on a
GPU at head dims 64 and 256: the first GPU run's autotune table (the report's) says which tile won.
"""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n, offs_d,
                 lo, hi, S, qk_scale, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k_ptrs = k_base + cols[:, None] * stride_ks + offs_d[None, :]
        v_ptrs = v_base + cols[:, None] * stride_vs + offs_d[None, :]
        if MASKED:
            k = tl.load(k_ptrs, mask=cols[:, None] < S, other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = tl.dot(q, tl.trans(k))
        if MASKED:
            keep = cols[None, :] < S
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            qk = tl.where(keep, qk * qk_scale, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, axis=1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.exp2(qk)
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs, mask=cols[:, None] < S, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, qk_scale, S, H,
                    stride_qb, stride_qh, stride_qs,
                    stride_kb, stride_kh, stride_ks,
                    stride_vb, stride_vh, stride_vs,
                    stride_ob, stride_oh, stride_os,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    if CAUSAL:  # longest rows first
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    q_base = Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    k_base = K + b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh
    v_base = V + b.to(tl.int64) * stride_vb + h.to(tl.int64) * stride_vh
    o_base = Out + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # Stage 1: key blocks that need no mask.
    if CAUSAL:
        full_hi = pid_m * BLOCK_M  # every key below this block's first query
    else:
        full_hi = (S // BLOCK_N) * BLOCK_N  # every key block wholly inside the sequence
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n, offs_d,
                                 0, full_hi, S, qk_scale, False, CAUSAL, BLOCK_N)
    # Stage 2: the diagonal blocks (causal) or the block holding the end of the sequence, masked.
    if CAUSAL:
        masked_hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    else:
        masked_hi = S
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_ks, stride_vs, offs_m, offs_n, offs_d,
                                 full_hi, masked_hi, S, qk_scale, True, CAUSAL, BLOCK_N)

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :], out.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < S)


def _tile(bm: int, bn: int, warps: int, stages: int) -> dict:
    return dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages)


# Shared memory in the comments is the estimate q + stages x (K + V) tiles in bf16; Triton's own layout decides.
CONFIGS = [
    _tile(128, 64, 8, 3),   # flash_attn_4_fa2's, measured at head dim 128 (479-493 TFLOP/s non-causal)
    _tile(128, 128, 8, 3),  # head dim 64: K and V tiles of 16 KB, three stages in 112 KB with q
    _tile(128, 128, 8, 2),
    _tile(256, 64, 16, 3),  # head dim 64: 256 queries on four warpgroups, fewer K/V reloads
    _tile(128, 64, 8, 2),   # head dim 256: q 64 KB + 2 x (K + V) 64 KB = 192 KB
    _tile(128, 32, 8, 3),   # head dim 256: q 64 KB + 3 x 32 KB = 160 KB
    _tile(64, 64, 4, 2),    # head dim 256: one warpgroup of 64 queries, 32 KB + 2 x 64 KB
    _tile(64, 32, 4, 2),
]


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, BLOCK_M: int = 128, BLOCK_N: int = 64,
           num_warps: int = 8, num_stages: int = 3) -> torch.Tensor:
    B, H, S, D = q.shape
    assert D in (16, 32, 64, 128, 256), f"head dim {D} must be a power of two from 16 to 256"
    # The kernel assumes unit stride along D (so loads vectorize); copy only if a caller passes a view.
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q)
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    attn_fwd_kernel[grid](q, k, v, o, LOG2E / math.sqrt(D), S, H,
                          q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                          v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                          HEAD_DIM=D, CAUSAL=bool(causal), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                          num_warps=num_warps, num_stages=num_stages)
    return o
