"""tasks/demos/flash_attn_4_fa2.py with every load and the store through on-device TMA descriptors
(tl.make_tensor_descriptor, one 2-D [S, D] descriptor per (batch, head), so rows past S come back as zeros), and
optionally Triton's warp specialization of the unmasked key loop (`tl.range(..., warp_specialize=True)`). One of the
variants benchmarks/triton_attention_variants.py times against the demo; CFG is set there."""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
CFG = dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=2, WS=False)


@triton.jit
def _blocks(acc, l_i, m_i, q, k_desc, v_desc, offs_m, offs_n, lo, hi, S, qk_scale,
            MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr, WS: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([start_n, 0])
        qk = tl.dot(q, tl.trans(k))
        if MASKED:
            cols = start_n + offs_n
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
        v = v_desc.load([start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attn_fwd_tma(Q, K, V, Out, qk_scale, S, H,
                 stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                 stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                 WS: tl.constexpr):
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    q_desc = tl.make_tensor_descriptor(Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh,
                                       shape=[S, HEAD_DIM], strides=[stride_qs, 1], block_shape=[BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + b.to(tl.int64) * stride_kb + h.to(tl.int64) * stride_kh,
                                       shape=[S, HEAD_DIM], strides=[stride_ks, 1], block_shape=[BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + b.to(tl.int64) * stride_vb + h.to(tl.int64) * stride_vh,
                                       shape=[S, HEAD_DIM], strides=[stride_vs, 1], block_shape=[BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(Out + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh,
                                       shape=[S, HEAD_DIM], strides=[stride_os, 1], block_shape=[BLOCK_M, HEAD_DIM])
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([pid_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        full_hi = pid_m * BLOCK_M
        masked_hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    else:
        full_hi = (S // BLOCK_N) * BLOCK_N
        masked_hi = S
    acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_desc, v_desc, offs_m, offs_n, 0, full_hi, S, qk_scale,
                            False, CAUSAL, BLOCK_N, WS)
    acc, l_i, m_i = _blocks(acc, l_i, m_i, q, k_desc, v_desc, offs_m, offs_n, full_hi, masked_hi, S, qk_scale,
                            True, CAUSAL, BLOCK_N, False)
    o_desc.store([pid_m * BLOCK_M, 0], (acc / l_i[:, None]).to(Out.dtype.element_ty))


def _alloc(size: int, align: int, stream):  # the descriptors' global scratch
    return torch.empty(size, dtype=torch.int8, device="cuda")


def kernel(q, k, v, causal):
    B, H, S, D = q.shape
    triton.set_allocator(_alloc)
    q, k, v = (t if t.stride(-1) == 1 and all(s % 8 == 0 for s in t.stride()[:-1]) else t.contiguous()
               for t in (q, k, v))
    o = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    cfg = dict(CFG)
    grid = (triton.cdiv(S, cfg["BLOCK_M"]), B * H)
    attn_fwd_tma[grid](q, k, v, o, LOG2E / math.sqrt(D), S, H,
                       q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                       v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                       HEAD_DIM=D, CAUSAL=bool(causal), **cfg)
    return o
