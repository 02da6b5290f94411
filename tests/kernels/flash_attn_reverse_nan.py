"""Wrong on purpose (a computed NaN, not an unwritten one): the key blocks are visited last to first (meant to
reuse the diagonal block's K and V from L2), and the causal loop is not cut at the diagonal. A query row's first
visited block then holds only keys past it: every score is -inf, the running maximum stays -inf, and
exp(-inf - (-inf)) is NaN, which the later blocks carry through. Every element is written; the NaN is computed.
Causal rows whose last key block reaches them, and every non-causal row, are right.
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, S, H,
                    stride_qb, stride_qh, stride_qs, stride_qd,
                    stride_kb, stride_kh, stride_ks, stride_kd,
                    stride_vb, stride_vh, stride_vs, stride_vd,
                    stride_ob, stride_oh, stride_os, stride_od,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    q_base = Q + b * stride_qb + h * stride_qh
    k_base = K + b * stride_kb + h * stride_kh
    v_base = V + b * stride_vb + h * stride_vh
    o_base = Out + b * stride_ob + h * stride_oh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :] * stride_qd, mask=offs_m[:, None] < S, other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    n_blocks = tl.cdiv(S, BLOCK_N)
    for i in range(0, n_blocks):
        start_n = (n_blocks - 1 - i) * BLOCK_N  # last block first
        cols = start_n + offs_n
        k = tl.load(k_base + cols[:, None] * stride_ks + offs_d[None, :] * stride_kd, mask=cols[:, None] < S, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * stride_vs + offs_d[None, :] * stride_vd, mask=cols[:, None] < S, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :] * stride_od, out.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < S)


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    assert D in (16, 32, 64, 128, 256), f"head dim {D} must be a power of two from 16 to 256"
    o = torch.empty_like(q)
    BLOCK_M, BLOCK_N = 64, 64
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    attn_fwd_kernel[grid](q, k, v, o, 1.0 / math.sqrt(D), S, H,
                          *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                          HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=bool(causal), num_warps=4, num_stages=2)
    return o
