"""Attention forward for Hopper in Gluon, Triton's lower-level dialect: the FlashAttention-3 structure that `tl.dot`
cannot express, at cuDNN's level on an H100 (1.00-1.09x at head dim 128).

Why Gluon: flash_attn_4_fa2 sits at 63% of the roofline and the usual Triton steps do not move it (README: TMA
descriptors, `warp_specialize=True`, issuing the next Q K^T by hand); its SASS waits on every wgmma of its loop, and its
8 warps run the softmax and the products in turn. Gluon (`triton.experimental.gluon`, in Triton 3.6 and 3.9 alike) compiles
through the same Triton compiler but leaves layouts, shared memory, barriers, async wgmma and warp specialization to
the kernel, as CUDA C++ does. This kernel uses them the way FlashAttention-3 does:
- Three partitions (`gl.warp_specialize`): a 1-warp producer issues TMA loads of Q once and of K and V per 128-key
  block into a 2-stage ring (full/empty mbarriers per stage, K and V apart so S = Q K^T can start before V lands),
  and two 4-warp consumers (one warpgroup each) own 64 of the block's 128 queries. Registers move to the consumers:
  24 for the producer, 240 for each consumer (setmaxnreg; maxnreg=168 at launch is what 3 warpgroups x 168 allow).
- Each consumer waits, arrives and stores on its own (empty barriers count two arrivals), so the two warpgroups
  drift apart and one's softmax runs while the other's wgmmas do: the ping-pong FA3 schedules with named barriers,
  here left to the warp schedulers. With one 8-warp consumer partition instead, each arrive costs a bar.sync of both
  warpgroups and they run in lockstep.
- In the loop, S(j) = Q K(j)^T and O += P(j-1) V(j-1) are issued async back to back and only S is waited for
  (`warpgroup_mma_wait(1)`), so the P V product runs under the wait for S. (ptxas then moves the wait for P V above
  the softmax, with P in registers and with P in shared memory alike: the softmax does not run under this
  warpgroup's own P V, only under the other warpgroup's products.)
- S's wgmma starts from zero (`use_acc=False`, no zeroing), exp2 with the scale folded in, the mask only on the
  blocks that need it (past the end of the sequence, or on the causal diagonal), causal programs longest first.
- Q, K, V and O go through rank-3 TMA descriptors over [B*H, S, D]: a block past a head's end is zero-filled on load
  and clipped on store, so no head reads or writes another's rows and S needs no padding.
Head dims 32, 64, 128 and 256 (64-key blocks there), bf16, on an sm_90 device; elsewhere (other head dims or GPUs, a
first element off 16 bytes, a CPU, where Gluon has no interpreter) the call runs flash_attn_4_fa2's kernel, below.

FLOPs: 4*B*H*S*S*D, half when causal. Measured on an H100 (2026-12-05, triton 3.6):
- `harness check tasks/flash_attn.yaml tasks/demos/flash_attn_7_gluon.py` (every rung, in the sandbox): pass, 30
  cases; 2480.4 us over both bench shapes, 664.9 TFLOP/s, 83.4% of the roofline (target 70%); B=4 H=32 S=4096 D=128
  1572.6 us, 699 TFLOP/s non-causal (torch.compile of the reference, which reaches SDPA, 1598.1 us) and 907.9 us,
  606 TFLOP/s causal. ncu: Shared pipeline 75%, top stall barrier.
- `harness run tasks/flash_attn.yaml` (the transcript, this kernel last): 2488.8 us, 662.7 TFLOP/s, 83.1%, where
  flash_attn_4_fa2 is at 3347.2 us, 61.8%.
- Beside cuDNN in one process (`python3 benchmarks/attention_vs_cudnn.py`, TFLOP/s non-causal / causal): 4x32x4096x128
  678.9 / 580.7 against cuDNN's 628.1 / 582.2 (1.08x / 1.00x); 8x16x8192x128 653.7 / 609.7 against 607.0 / 559.9
  (1.08x / 1.09x); head dim 64, 4x32x4096x64, 472.0 / 404.2 against 482.6 / 436.7 (0.98x / 0.93x).
  flash_attn_4_fa2 the same run: 511.8 / 437.1 at 4x32x4096x128.
- Head dim 256 (64-key blocks; `bash benchmarks/gpu_session.sh gluon-d256`): `harness check
  tasks/flash_attn_d256.yaml` pass, 30 cases, 1214.2 us over both bench shapes, 679.1 TFLOP/s, 86.7% of the roofline
  (target 80%); beside cuDNN at 4x8x4096x256, 722.7 / 607.2 against 718.2 / 596.8 (1.01x / 1.02x).
- Tried beside it (`triton.testing.do_bench`): 64-key blocks lose 10%; a third stage or maxnreg=160 change little.
"""
import functools
import math

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

LOG2E = 1.4426950408889634
# Triton 3.9 names the TMA copies async_load / async_store and no longer has the old names, the only ones 3.6 has.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def _producer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale):
    q_desc, k_desc, v_desc, o_desc = descs
    q_smem, k_smem, v_smem = smem
    q_bar, k_ready, k_empty, v_ready, v_empty = bars
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    _tma_load(q_desc, [bh, m0, 0], q_bar, q_smem)
    for i in range(n_blocks):
        s = i % STAGES
        ph = (i // STAGES) & 1
        mbarrier.wait(k_empty.index(s), ph ^ 1)
        mbarrier.expect(k_ready.index(s), k_desc.block_type.nbytes)
        _tma_load(k_desc, [bh, i * BLOCK_N, 0], k_ready.index(s), k_smem.index(s))
        mbarrier.wait(v_empty.index(s), ph ^ 1)
        mbarrier.expect(v_ready.index(s), v_desc.block_type.nbytes)
        _tma_load(v_desc, [bh, i * BLOCK_N, 0], v_ready.index(s), v_smem.index(s))


@gluon.jit
def _masked(s, i, r0, S, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr,
            s_layout: gl.constexpr):
    cols = gl.expand_dims(i * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout)), 0)
    rows = gl.expand_dims(r0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout)), 1)
    if CAUSAL:
        keep = (cols < S) & (cols <= rows)
    else:
        keep = (cols < S) & (rows >= 0)
    return gl.where(keep, s, float("-inf"))


@gluon.jit
def _consumer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale, CAUSAL: gl.constexpr, WG: gl.constexpr):
    """One warpgroup's 64 query rows: its own waits, arrives and store, so the two warpgroups drift apart and one's
    softmax runs under the other's products."""
    q_desc, k_desc, v_desc, o_desc = descs
    q_smem, k_smem, v_smem = smem
    q_bar, k_ready, k_empty, v_ready, v_empty = bars
    BLOCK_M: gl.constexpr = o_desc.block_type.shape[1]
    HEAD_DIM: gl.constexpr = q_desc.block_type.shape[2]
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[1]
    STAGES: gl.constexpr = k_smem.type.shape[0]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    q = q_smem.reshape([2 * BLOCK_M, HEAD_DIM]).slice(WG * BLOCK_M, BLOCK_M, dim=0)
    r0 = m0 + WG * BLOCK_M
    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)

    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_ready.index(0), 0)
    s_tok = warpgroup_mma(q, k_smem.index(0).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)), zero_s,
                          use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s_tok])
    mbarrier.arrive(k_empty.index(0), count=1)
    if (BLOCK_N > S) or (CAUSAL and BLOCK_N - 1 > r0):
        s = _masked(s, 0, r0, S, BLOCK_M, BLOCK_N, CAUSAL, s_layout)
    m = gl.max(s, axis=1) * qk_scale
    p = gl.exp2(s * qk_scale - gl.expand_dims(m, 1))
    l = gl.sum(p, axis=1)
    pb = gl.convert_layout(p.to(gl.bfloat16), p_layout)
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)
    for i in range(1, n_blocks):
        st = i % STAGES
        pst = (i - 1) % STAGES
        mbarrier.wait(k_ready.index(st), (i // STAGES) & 1)
        s_tok = warpgroup_mma(q, k_smem.index(st).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)), zero_s,
                              use_acc=False, is_async=True)
        mbarrier.wait(v_ready.index(pst), ((i - 1) // STAGES) & 1)
        o_tok = warpgroup_mma(pb, v_smem.index(pst).reshape([BLOCK_N, HEAD_DIM]), o, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s_tok])
        mbarrier.arrive(k_empty.index(st), count=1)
        if ((i + 1) * BLOCK_N > S) or (CAUSAL and (i + 1) * BLOCK_N - 1 > r0):
            s = _masked(s, i, r0, S, BLOCK_M, BLOCK_N, CAUSAL, s_layout)
        m_new = gl.maximum(m, gl.max(s, axis=1) * qk_scale)
        p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
        alpha = gl.exp2(m - m_new)
        l = l * alpha + gl.sum(p, axis=1)
        o, pb = warpgroup_mma_wait(0, deps=[o_tok, pb])
        mbarrier.arrive(v_empty.index(pst), count=1)
        o = o * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
        pb = gl.convert_layout(p.to(gl.bfloat16), p_layout)
        m = m_new
    last = n_blocks - 1
    mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
    o_tok = warpgroup_mma(pb, v_smem.index(last % STAGES).reshape([BLOCK_N, HEAD_DIM]), o, is_async=True)
    o = warpgroup_mma_wait(0, deps=[o_tok])
    o = o / gl.expand_dims(gl.convert_layout(l, gl.SliceLayout(1, o_layout)), 1)
    q.store(o.to(gl.bfloat16))  # this warpgroup's Q rows are no longer read: they stage its O for the TMA store
    fence_async_shared()
    _tma_store(o_desc, [bh, r0, 0], q_smem.slice(WG * BLOCK_M, BLOCK_M, dim=1))
    tma.store_wait(0)


# The partitions' entry points. Gluon hands a partition its arguments as run-time values (a constexpr among them
# arrives as an i1 or an i32), so the mask and the warpgroup are fixed here, one function each; the stage count is
# read from the ring's shape. Worker partitions share one signature.
@gluon.jit
def _rows_0_63(descs, smem, bars, bh, m0, n_blocks, S, qk_scale):
    _consumer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale, False, 0)


@gluon.jit
def _rows_64_127(descs, smem, bars, bh, m0, n_blocks, S, qk_scale):
    _consumer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale, False, 1)


@gluon.jit
def _causal_rows_0_63(descs, smem, bars, bh, m0, n_blocks, S, qk_scale):
    _consumer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale, True, 0)


@gluon.jit
def _causal_rows_64_127(descs, smem, bars, bh, m0, n_blocks, S, qk_scale):
    _consumer(descs, smem, bars, bh, m0, n_blocks, S, qk_scale, True, 1)


@gluon.jit
def attn_fwd_gluon(q_desc, k_desc, v_desc, o_desc, S, qk_scale, CAUSAL: gl.constexpr, STAGES: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[1]
    if CAUSAL:  # longest rows first
        pid_m = gl.num_programs(0) - 1 - gl.program_id(0)
    else:
        pid_m = gl.program_id(0)
    bh = gl.program_id(1)
    m0 = pid_m * BLOCK_M
    if CAUSAL:
        hi = gl.minimum(S, m0 + BLOCK_M)
    else:
        hi = S
    n_blocks = gl.cdiv(hi, k_desc.block_type.shape[1])
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # one arrive from each consumer warpgroup
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    args = ((q_desc, k_desc, v_desc, o_desc), (q_smem, k_smem, v_smem), (q_bar, k_ready, k_empty, v_ready, v_empty),
            bh, m0, n_blocks, S, qk_scale)
    if CAUSAL:
        gl.warp_specialize([(_causal_rows_0_63, args), (_causal_rows_64_127, args), (_producer, args)], [4, 1],
                           [240, 24])
    else:
        gl.warp_specialize([(_rows_0_63, args), (_rows_64_127, args), (_producer, args)], [4, 1], [240, 24])


@functools.cache
def _smem_layout(*block: int):
    """The TMA tile's swizzled shared-memory layout: 8 us of Python each time it is built, so built once a shape."""
    return gl.NVMMASharedLayout.get_default_for(list(block), gl.bfloat16)


def _attention_hopper(q, k, v, causal, BLOCK_M=128, BLOCK_N=128, STAGES=2):
    B, H, S, D = q.shape
    q3, k3, v3 = (t.contiguous().view(B * H, S, D) for t in (q, k, v))  # TMA needs unit stride along D
    o = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    lq = _smem_layout(1, BLOCK_M, D)
    lk = _smem_layout(1, BLOCK_N, D)
    q_desc = TensorDescriptor.from_tensor(q3, [1, BLOCK_M, D], lq)
    o_desc = TensorDescriptor.from_tensor(o.view(B * H, S, D), [1, BLOCK_M // 2, D], lq)  # one half per warpgroup
    k_desc = TensorDescriptor.from_tensor(k3, [1, BLOCK_N, D], lk)
    v_desc = TensorDescriptor.from_tensor(v3, [1, BLOCK_N, D], lk)
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    attn_fwd_gluon[grid](q_desc, k_desc, v_desc, o_desc, S, LOG2E / math.sqrt(D), bool(causal), STAGES,
                         num_warps=4, maxnreg=168)
    return o


# flash_attn_4_fa2's kernel, unchanged: other head dims, and a CPU's interpreter.
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


def _attention_fa2(q, k, v, causal):
    B, H, S, D = q.shape
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q)
    grid = (triton.cdiv(S, 128), B * H)
    attn_fwd_kernel[grid](q, k, v, o, LOG2E / math.sqrt(D), S, H,
                          q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                          v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                          HEAD_DIM=D, CAUSAL=bool(causal), BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)
    return o


HOPPER_KEY_BLOCK = {32: 128, 64: 128, 128: 128, 256: 64}
"""Head dim -> key block of the Gluon kernel, for the head dims it was checked at on a GPU. At head dim 256 a 128-key
stage does not fit beside Q; 64-key blocks at 2 stages take 197 KB of shared memory and build without spills
(checked on an H100 2026-12-05: `harness check tasks/flash_attn_d256.yaml`, pass, 86.7% of the roofline)."""


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    D = q.shape[-1]
    assert D in (16, 32, 64, 128, 256), f"head dim {D} must be a power of two from 16 to 256"
    if D in HOPPER_KEY_BLOCK and q.numel() > 0 and _hopper(q, k, v):  # TMA takes no empty dimension
        return _attention_hopper(q, k, v, causal, BLOCK_N=HOPPER_KEY_BLOCK[D])
    return _attention_fa2(q, k, v, causal)


@functools.cache
def _device(index: int):
    """A GPU's properties (compute capability, SM count), read once."""
    return torch.cuda.get_device_properties(index)


def _hopper(*ts: torch.Tensor) -> bool:
    """The Gluon kernel's preconditions: bf16 on an sm_90 device, each tensor's first element 16-byte aligned (TMA's
    rule; a contiguous view one element in is not)."""
    t = ts[0]
    if not t.is_cuda or any(x.dtype != torch.bfloat16 or x.data_ptr() % 16 for x in ts):
        return False
    return _device(t.device.index).major == 9


if __name__ == "__main__":  # a check against torch on awkward shapes, then the speed at the bench shape
    for S, D in ((300, 128), (37, 64), (129, 32)):
        q, k, v = (torch.randn(2, 3, S, D, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        for causal in (False, True):
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.testing.assert_close(kernel(q, k, v, causal), ref, rtol=2e-2, atol=2e-2)
    q, k, v = (torch.randn(4, 32, 4096, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    for causal in (False, True):
        ms = triton.testing.do_bench(lambda: kernel(q, k, v, causal))
        flops = 4 * 4 * 32 * 4096 * 4096 * 128 * (0.5 if causal else 1)
        print(f"causal={causal}: {flops / ms / 1e9:.0f} TFLOP/s")
