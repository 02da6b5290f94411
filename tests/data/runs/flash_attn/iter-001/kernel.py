"""Attention forward, first try: FlashAttention with an online softmax, 128 queries per program, a loop over
64-key blocks, exp2 with the scale folded into log2(e).

Does not compile: the running rescale factor alpha = exp2(m_old - m_new) has one value per query row, shape
[BLOCK_M], and is multiplied straight into the [BLOCK_M, HEAD_DIM] accumulator. Broadcasting lines up trailing
dimensions, so Triton tries to match BLOCK_M (128) against HEAD_DIM (64) and refuses. The factor must be
alpha[:, None]. (At HEAD_DIM = 128 the same line would compile and scale columns instead of rows: the shape
check is the lucky case.)
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, qk_scale, S, H,
                    stride_qb, stride_qh, stride_qs,
                    stride_kb, stride_kh, stride_ks,
                    stride_vb, stride_vh, stride_vs,
                    stride_ob, stride_oh, stride_os,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :],
                mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = tl.minimum((pid_m + 1) * BLOCK_M, S) if CAUSAL else S
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + b * stride_kb + h * stride_kh + cols[:, None] * stride_ks + offs_d[None, :],
                    mask=cols[:, None] < S, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(V + b * stride_vb + h * stride_vh + cols[:, None] * stride_vs + offs_d[None, :],
                    mask=cols[:, None] < S, other=0.0)
        acc = acc * alpha + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(Out + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :],
             out.to(Out.dtype.element_ty), mask=offs_m[:, None] < S)


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(S, 128), B * H)
    attn_fwd_kernel[grid](q, k, v, o, 1.4426950408889634 / math.sqrt(D), S, H,
                          q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                          v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                          HEAD_DIM=D, BLOCK_M=128, BLOCK_N=64, CAUSAL=bool(causal), num_warps=8, num_stages=3)
    return o
