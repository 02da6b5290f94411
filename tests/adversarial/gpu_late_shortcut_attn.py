"""Cheat: attention right for its first eight calls at a shape, then the last batch item is skipped (its output is
whatever memory held): the first timed call is right, later ones lose 1/B of the work. The output is batch-first
(B, H, S, D): sampled whole rows, a row was a whole batch item of H*S*D elements, and a sample held one of them, so
a judged pick saw the skipped item one time in B (a sample now takes every row of so few, at job.SAMPLE_WIDTH
random elements each)."""
import math

import torch
import triton
import triton.language as tl

_seen = {}


@triton.jit
def _attn(q_ptr, k_ptr, v_ptr, o_ptr, scale, S, H, sb, sh, ss, CAUSAL: tl.constexpr, D: tl.constexpr,
          BM: tl.constexpr, BN: tl.constexpr):
    # q, k, v and o share their strides (contiguous tensors of one shape): one base per (batch, head)
    start = tl.program_id(0) * BM
    base = (tl.program_id(1) // H) * sb + (tl.program_id(1) % H) * sh
    rows = start + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * ss + dims[None, :], mask=rows[:, None] < S, other=0.0)
    top = tl.full([BM], float("-inf"), dtype=tl.float32)
    total = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, D], dtype=tl.float32)
    end = tl.minimum(start + BM, S) if CAUSAL else S
    for n0 in range(0, end, BN):
        keys = n0 + cols
        inside = keys[:, None] < S
        kt = tl.load(k_ptr + base + keys[:, None] * ss + dims[None, :], mask=inside, other=0.0)
        score = tl.dot(q, tl.trans(kt)) * scale
        ok = keys[None, :] < S
        if CAUSAL:
            ok = ok & (keys[None, :] <= rows[:, None])
        score = tl.where(ok, score, float("-inf"))
        new_top = tl.maximum(top, tl.max(score, axis=1))
        w = tl.exp(score - new_top[:, None])
        shrink = tl.exp(top - new_top)
        total = total * shrink + tl.sum(w, axis=1)
        vt = tl.load(v_ptr + base + keys[:, None] * ss + dims[None, :], mask=inside, other=0.0)
        acc = acc * shrink[:, None] + tl.dot(w.to(vt.dtype), vt)
        top = new_top
    tl.store(o_ptr + base + rows[:, None] * ss + dims[None, :], (acc / total[:, None]).to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < S)


def kernel(q, k, v, causal):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    _seen[q.shape] = _seen.get(q.shape, 0) + 1
    items = B - 1 if _seen[q.shape] > 8 and B > 1 else B  # late: the last batch item is never written
    grid = (triton.cdiv(S, 64), items * H)
    _attn[grid](q, k, v, o, 1.0 / math.sqrt(D), S, H, q.stride(0), q.stride(1), q.stride(2), CAUSAL=bool(causal), D=D,
                BM=64, BN=64, num_warps=4, num_stages=2)
    return o
