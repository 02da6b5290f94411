"""Attention forward in CuTe DSL for Hopper, persistent: one CTA per SM walks its share of the (query block, head)
tiles, so the producer loads the next tile's Q and first K/V blocks while the MMA warpgroups finish the last P V and
store O of this one.

Why (flash_attn_cute_6_overlap, measured on an H100 on 2026-12-06): causal it reached 0.78-0.81x cuDNN where
non-causal reached 1.00x. Nsight Compute (`python3 benchmarks/attention_ncu.py`) put cuDNN's kernel on 132
persistent CTAs and _6 on 4096, one a SM: a causal CTA is half as long on average, so each CTA's start (barriers,
Q and the first K block before any product) and end (the last P V, the store) weigh twice; more K/V stages did not
help (0.81x at three stages of 96 keys).
What changed from flash_attn_cute_6_overlap:
- Grid of min(work units, SMs) CTAs; CTA b takes units b, b + grid, b + 2 grid, ... (a static schedule: no
  counter to reset between calls).
- Causal, a unit is a pair of query blocks of one head, i and q_blocks - 1 - i, the long one first: every unit
  holds the same number of key blocks (q_blocks + 1; with an odd count the middle block is a unit alone, half as
  long), so the static schedule stays balanced (longest-first alone would not be: 132 CTAs striding 4096 tiles of
  32 lengths give some CTAs 20% more keys than others). Non-causal, a unit is one query block. Units are numbered
  head by head, so the ~132 running at once share the K and V of a few heads in L2 (about 8 causal at S 4096, 4
  non-causal; launched heads first, _6 lost a third: 0.59-0.65x).
- Q has an empty barrier now: the MMA warpgroups hand Q back after a tile's last S = Q K^T, and the producer loads
  the next tile's Q into it while the last P V and the store of O run. K and V stage counters run on across tiles;
  P restarts at stage 0 (the last tile's final P V has been waited for by then).
Kept from flash_attn_cute_6_overlap: within a warpgroup block j's S and block j-1's P V issued together, the two
MMA warpgroups taking turns (ping-pong), P double-buffered in shared memory, K and V released apart, 128 x 128
tiles, a TMA producer warpgroup (setmaxnreg 24 / 240), exp2 with the scale folded, masks only where needed.
On an H100 (2026-12-06, `bash benchmarks/gpu_session.sh frontier-cute7`): `harness check tasks/flash_attn_cute.yaml`
with this file passes every rung, 30 cases, 585.5 TFLOP/s over both bench shapes (619.4 full, 527.7 causal), 72.7%
of the roofline; beside cuDNN in one process (`ATTN_SHAPES=4x32x4096x128,8x16x8192x128 python3
benchmarks/attention_vs_cudnn.py`), TFLOP/s non-causal / causal: 4x32x4096x128 612.1 / 510.6 against 630.0 / 584.0
(0.97x / 0.87x), 8x16x8192x128 572.8 / 525.6 against 632.6 / 581.4 (0.91x / 0.90x), where _6 reached 0.98x / 0.79x
and 0.95x / 0.85x in the same run. A second H100 the same afternoon (its cuDNN 5% slower): 0.95x / 0.87x and 0.88x /
0.89x, _6 1.00x / 0.82x and 0.96x / 0.89x; a copy with PERSISTENT_FULL = False (non-causal on one CTA per query
block, as _6) 0.97x / 0.86x and 0.88x / 0.89x, so what costs the non-causal case 1-8 points against _6 is not the
persistent grid (not explained). `harness run tasks/flash_attn_cute.yaml` there (replay transcript, every rung):
this kernel is iteration 5, 564.3 TFLOP/s, 74.0% of the roofline, after _4_fast's 513.8 and 67.3%. Built for sm_90a
on a CPU as well (`python3 benchmarks/cute_compile_check.py flash_attn_cute_7`: every shape of the task, 168
registers, no local memory, the same 32 HGMMAs and 4 wgmma waits as _6). The task's test shapes have at most 132
units, so on a GPU with 132 SMs each CTA there runs one unit: a CTA's walk over several units ran only at the bench
shapes (S 4096, 32 query blocks).
"""
import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cute.runtime import from_dlpack

BM, BN = 128, 128  # queries per CTA, keys per block
KV_STAGES = 2
P_STAGES = 2  # P of block j written while the wgmma of block j-1 reads P of j-1
PINGPONG = True  # the two MMA warpgroups take turns issuing their products (named barriers 3 and 4)
PERSISTENT_FULL = True  # non-causal on one CTA per SM too (False: one CTA per query block, as _6)
MMA_THREADS = 256  # two MMA warpgroups, one per 64 query rows
THREADS = 128 + MMA_THREADS  # plus one producer warpgroup
PRODUCER_REGS, MMA_REGS = 24, 240  # setmaxnreg split: 128 * 24 + 256 * 240 <= 64K registers
LOG2E = 1.4426950408889634
NEG_INF = float("-inf")
ROW_MAJOR, COL_MAJOR = utils.LayoutEnum.ROW_MAJOR, utils.LayoutEnum.COL_MAJOR


def _storage(D: int):
    @cute.struct
    class SharedStorage:
        q_bar: cute.struct.MemRange[cutlass.Int64, 2]
        k_bars: cute.struct.MemRange[cutlass.Int64, KV_STAGES * 2]
        v_bars: cute.struct.MemRange[cutlass.Int64, KV_STAGES * 2]
        sQ: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BM * D], 1024]
        sK: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BN * D * KV_STAGES], 1024]
        sV: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BN * D * KV_STAGES], 1024]
        sP: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BM * BN * P_STAGES], 1024]
    return SharedStorage


def _row_half(i: int) -> int:
    """Which of its two rows the i-th accumulator value of a thread belongs to. A wgmma accumulator fragment is
    ((2, 2, N / 8), 1, 1): two adjacent columns, then rows r and r + 8, then column groups of 8."""
    return (i // 2) % 2


def _quad_reduce(x: cutlass.Float32, op) -> cutlass.Float32:
    """Combine a value across the 4 threads of a quad (they hold the same rows, different columns)."""
    x = op(x, cute.arch.shuffle_sync_bfly(x, offset=1))
    return op(x, cute.arch.shuffle_sync_bfly(x, offset=2))


def _turn_wait(mwg) -> None:
    """Ping-pong: wait for this MMA warpgroup's turn to issue (named barrier 3 + mwg: it syncs, the other arrives),
    so one warpgroup's softmax runs under the other's wgmma."""
    if cutlass.const_expr(PINGPONG):
        cute.arch.barrier(barrier_id=3 + mwg, number_of_threads=256)


def _turn_pass(mwg) -> None:
    if cutlass.const_expr(PINGPONG):
        cute.arch.barrier_arrive(barrier_id=4 - mwg, number_of_threads=256)


@cute.jit
def _issue_qk(mma_qk: cute.TiledMma, acc_s: cute.Tensor, tSrQ: cute.Tensor, tSrK: cute.Tensor, k_stage: cutlass.Int32):
    """S = Q K^T of the key block in K stage `k_stage`, issued (not waited for) as one wgmma group."""
    for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
        cute.gemm(mma_qk, acc_s, tSrQ[(None, None, kb, 0)], tSrK[(None, None, kb, k_stage)], acc_s)
    warpgroup.commit_group()


@cute.jit
def _issue_pv(mma_pv: cute.TiledMma, acc_o: cute.Tensor, tOrP: cute.Tensor, tOrV: cute.Tensor, p_stage: cutlass.Int32,
              v_stage: cutlass.Int32):
    """O += P V with P from P stage `p_stage` and V from V stage `v_stage`, issued as one wgmma group."""
    for kb in cutlass.range_constexpr(cute.size(tOrP, mode=[2])):
        cute.gemm(mma_pv, acc_o, tOrP[(None, None, kb, p_stage)], tOrV[(None, None, kb, v_stage)], acc_o)
    warpgroup.commit_group()


@cute.jit
def _softmax(acc_s: cute.Tensor, tScS: cute.Tensor, rP: cute.Tensor, tSsP: cute.Tensor, row_max: cute.Tensor,
             row_sum: cute.Tensor, alpha: cute.Tensor, j: cutlass.Int32, unmasked: cutlass.Int32, S: cutlass.Int32,
             row0: cutlass.Int32, qk_scale: cutlass.Float32, causal: cutlass.Constexpr):
    """Block j's S (acc_s) -> its probabilities, rounded to bfloat16 into P stage j % P_STAGES in shared memory (the
    other stage may still be read by the wgmma of block j - 1); the running max and sum updated, and alpha, the
    factor O must be rescaled by, set."""
    if j >= unmasked:
        col0 = j * BN
        for i in cutlass.range_constexpr(cute.size(acc_s)):
            row, col = tScS[i]
            if col0 + col >= S:
                acc_s[i] = NEG_INF
            if cutlass.const_expr(causal):
                if col0 + col > row0 + row:
                    acc_s[i] = NEG_INF
    block_max = cute.make_rmem_tensor((2,), cutlass.Float32)
    for r in cutlass.range_constexpr(2):
        block_max[r] = row_max[r]
    for i in cutlass.range_constexpr(cute.size(acc_s)):
        acc_s[i] = acc_s[i] * qk_scale
        block_max[_row_half(i)] = cute.arch.fmax(block_max[_row_half(i)], acc_s[i])
    for r in cutlass.range_constexpr(2):
        new_max = _quad_reduce(block_max[r], cute.arch.fmax)
        alpha[r] = cute.arch.exp2(row_max[r] - new_max)
        row_max[r] = new_max
        row_sum[r] = row_sum[r] * alpha[r]
    for i in cutlass.range_constexpr(cute.size(acc_s)):
        p = cute.arch.exp2(acc_s[i] - row_max[_row_half(i)])
        row_sum[_row_half(i)] = row_sum[_row_half(i)] + p
        rP[i] = p.to(cutlass.BFloat16)
    cute.autovec_copy(rP, tSsP[None, None, None, j % P_STAGES])  # adjacent column pairs: 32-bit shared stores


@cute.kernel
def attn_kernel(tma_q: cute.CopyAtom, mQ: cute.Tensor, tma_k: cute.CopyAtom, mK: cute.Tensor,
                tma_v: cute.CopyAtom, mV: cute.Tensor, mO: cute.Tensor,
                mma_qk: cute.TiledMma, mma_pv: cute.TiledMma,
                sQ_layout: cute.ComposedLayout, sK_layout: cute.ComposedLayout, sV_layout: cute.ComposedLayout,
                sP_layout: cute.ComposedLayout, qk_scale: cutlass.Float32, causal: cutlass.Constexpr,
                storage_type: cutlass.Constexpr):
    S, D, BH = mQ.shape  # views are (S, D, B*H) for Q, K, O and (D, S, B*H) for V
    tidx, _, _ = cute.arch.thread_idx()
    bx, _, _ = cute.arch.block_idx()
    grid, _, _ = cute.arch.grid_dim()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 0:
        cpasync.prefetch_descriptor(tma_q)
        cpasync.prefetch_descriptor(tma_k)
        cpasync.prefetch_descriptor(tma_v)
    q_blocks = (S + BM - 1) // BM
    per_head = _units_per_head(q_blocks, causal)
    units = per_head * BH

    smem = utils.SmemAllocator()
    storage = smem.allocate(storage_type)
    one_cta = cute.make_layout((1, 1, 1, 1))
    producer = pipeline.CooperativeGroup(pipeline.Agent.Thread)
    consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, MMA_THREADS // 32)  # one arrive per warp
    q_pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.q_bar.data_ptr(), num_stages=1, producer_group=producer, consumer_group=consumers,
        tx_count=BM * D * 2, cta_layout_vmnk=one_cta, defer_sync=True)
    k_pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.k_bars.data_ptr(), num_stages=KV_STAGES, producer_group=producer,
        consumer_group=consumers, tx_count=BN * D * 2, cta_layout_vmnk=one_cta, defer_sync=True)
    v_pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.v_bars.data_ptr(), num_stages=KV_STAGES, producer_group=producer,
        consumer_group=consumers, tx_count=BN * D * 2, cta_layout_vmnk=one_cta, defer_sync=True)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()

    sQ = storage.sQ.get_tensor(sQ_layout.outer, swizzle=sQ_layout.inner)  # (BM, D, 1)
    sK = storage.sK.get_tensor(sK_layout.outer, swizzle=sK_layout.inner)  # (BN, D, stages)
    sV = storage.sV.get_tensor(sV_layout.outer, swizzle=sV_layout.inner)  # (D, BN, stages)
    sP = storage.sP.get_tensor(sP_layout.outer, swizzle=sP_layout.inner)  # (BM, BN, P_STAGES)

    wg = cute.arch.make_warp_uniform(tidx // 128)
    if wg == 0:
        # Producer warpgroup: one thread of warp 0 issues every TMA load (per tile: Q, then K and V block by block).
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
        if warp == 0:
            q_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
            k_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, KV_STAGES)
            v_put = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, KV_STAGES)
            for u in cutlass.range(bx, units, grid, unroll=1):
                bh = u // per_head
                for half in cutlass.range(_tiles_in(u % per_head, q_blocks, causal), unroll=1):
                    pid_m = _query_block(u % per_head, half, q_blocks, causal)
                    n_blocks = _key_blocks(pid_m, S, causal)
                    gQ = cute.local_tile(mQ[None, None, bh], (BM, D), (pid_m, 0))  # (BM, D)
                    gK = cute.local_tile(mK[None, None, bh], (BN, D), (None, 0))  # (BN, D, key blocks)
                    gV = cute.local_tile(mV[None, None, bh], (D, BN), (0, None))  # (D, BN, key blocks)
                    tQsQ, tQgQ = cpasync.tma_partition(tma_q, 0, cute.make_layout(1), cute.group_modes(sQ, 0, 2),
                                                       cute.group_modes(gQ, 0, 2))
                    tKsK, tKgK = cpasync.tma_partition(tma_k, 0, cute.make_layout(1), cute.group_modes(sK, 0, 2),
                                                       cute.group_modes(gK, 0, 2))
                    tVsV, tVgV = cpasync.tma_partition(tma_v, 0, cute.make_layout(1), cute.group_modes(sV, 0, 2),
                                                       cute.group_modes(gV, 0, 2))
                    q_pipe.producer_acquire(q_put)  # the last tile's S products are done with Q
                    cute.copy(tma_q, tQgQ, tQsQ[(None, 0)], tma_bar_ptr=q_pipe.producer_get_barrier(q_put))
                    q_put.advance()
                    for j in cutlass.range(n_blocks, unroll=1):
                        k_pipe.producer_acquire(k_put)
                        cute.copy(tma_k, tKgK[(None, j)], tKsK[(None, k_put.index)],
                                  tma_bar_ptr=k_pipe.producer_get_barrier(k_put))
                        k_pipe.producer_commit(k_put)
                        k_put.advance()
                        v_pipe.producer_acquire(v_put)
                        cute.copy(tma_v, tVgV[(None, j)], tVsV[(None, v_put.index)],
                                  tma_bar_ptr=v_pipe.producer_get_barrier(v_put))
                        v_pipe.producer_commit(v_put)
                        v_put.advance()
            q_pipe.producer_tail(q_put)  # every stage handed back before this warp exits
            k_pipe.producer_tail(k_put)
            v_pipe.producer_tail(v_put)
    else:
        # Two MMA warpgroups, 64 query rows each.
        cute.arch.setmaxregister_increase(MMA_REGS)
        mwg = wg - 1
        wg_qk = mma_qk.get_slice(mwg * 128)
        wg_pv = mma_pv.get_slice(mwg * 128)
        tSrQ = mma_qk.make_fragment_A(wg_qk.partition_A(sQ))
        tSrK = mma_qk.make_fragment_B(wg_qk.partition_B(sK))
        tOrP = mma_pv.make_fragment_A(wg_pv.partition_A(sP))
        tOrV = mma_pv.make_fragment_B(wg_pv.partition_B(sV))
        thr_qk = mma_qk.get_slice(tidx - 128)
        thr_pv = mma_pv.get_slice(tidx - 128)
        tSsP = thr_qk.partition_C(sP)  # where this thread's P values go, per P stage
        tScS = thr_qk.partition_C(cute.make_identity_tensor((BM, BN)))  # (row, col) of each S value in the tile
        tOcO = thr_pv.partition_C(cute.make_identity_tensor((BM, D)))
        acc_s = cute.make_rmem_tensor(tScS.shape, cutlass.Float32)
        rP = cute.make_rmem_tensor(tScS.shape, cutlass.BFloat16)
        acc_o = cute.make_rmem_tensor(tOcO.shape, cutlass.Float32)
        mma_qk.set(warpgroup.Field.ACCUMULATE, True)
        mma_pv.set(warpgroup.Field.ACCUMULATE, True)
        row_max = cute.make_rmem_tensor((2,), cutlass.Float32)
        row_sum = cute.make_rmem_tensor((2,), cutlass.Float32)
        alpha = cute.make_rmem_tensor((2,), cutlass.Float32)
        inv = cute.make_rmem_tensor((2,), cutlass.Float32)

        q_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        k_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, KV_STAGES)
        v_get = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, KV_STAGES)
        for u in cutlass.range(bx, units, grid, unroll=1):
            bh = u // per_head
            for half in cutlass.range(_tiles_in(u % per_head, q_blocks, causal), unroll=1):
                pid_m = _query_block(u % per_head, half, q_blocks, causal)
                n_blocks = _key_blocks(pid_m, S, causal)
                # Blocks below this index need no mask: wholly inside the sequence and (causal) below the diagonal.
                unmasked = S // BN
                if cutlass.const_expr(causal):
                    unmasked = cutlass.min(unmasked, (pid_m * BM) // BN)
                row0 = pid_m * BM
                acc_o.fill(0.0)
                for r in cutlass.range_constexpr(2):
                    row_max[r] = NEG_INF
                    row_sum[r] = 0.0

                q_pipe.consumer_wait(q_get)
                # Between a fence and the last wgmma of a step there is no branch: a wgmma in a divergent path makes
                # ptxas serialize them all (C7519). So block 0's S and the last block's P V are issued outside the loop.
                if mwg == 1:
                    _turn_pass(mwg)  # a tile's first turn is warpgroup 0's
                k_pipe.consumer_wait(k_get)
                acc_s.fill(0.0)
                _turn_wait(mwg)
                warpgroup.fence()
                _issue_qk(mma_qk, acc_s, tSrQ, tSrK, k_get.index)
                _turn_pass(mwg)
                warpgroup.wait_group(0)
                k_pipe.consumer_release(k_get)
                k_get.advance()
                _softmax(acc_s, tScS, rP, tSsP, row_max, row_sum, alpha, 0, unmasked, S, row0, qk_scale, causal)
                cute.arch.fence_proxy("async.shared", space="cta")
                cute.arch.barrier(barrier_id=1 + mwg, number_of_threads=128)
                for j in cutlass.range(1, n_blocks, unroll=1):
                    k_pipe.consumer_wait(k_get)
                    v_pipe.consumer_wait(v_get)
                    acc_s.fill(0.0)
                    _turn_wait(mwg)
                    warpgroup.fence()
                    _issue_qk(mma_qk, acc_s, tSrQ, tSrK, k_get.index)
                    _issue_pv(mma_pv, acc_o, tOrP, tOrV, (j - 1) % P_STAGES, v_get.index)
                    _turn_pass(mwg)
                    warpgroup.wait_group(1)  # S of block j is done; P V of block j - 1 still runs
                    k_pipe.consumer_release(k_get)
                    k_get.advance()
                    _softmax(acc_s, tScS, rP, tSsP, row_max, row_sum, alpha, j, unmasked, S, row0, qk_scale, causal)
                    warpgroup.wait_group(0)  # P V of block j - 1 has landed: O may be rescaled
                    v_pipe.consumer_release(v_get)
                    v_get.advance()
                    for i in cutlass.range_constexpr(cute.size(acc_o)):
                        acc_o[i] = acc_o[i] * alpha[_row_half(i)]
                    cute.arch.fence_proxy("async.shared", space="cta")  # this block's P visible to the next wgmma
                    cute.arch.barrier(barrier_id=1 + mwg, number_of_threads=128)
                q_pipe.consumer_release(q_get)  # every S of this tile is done: the producer may load the next Q
                q_get.advance()
                v_pipe.consumer_wait(v_get)
                _turn_wait(mwg)
                warpgroup.fence()
                _issue_pv(mma_pv, acc_o, tOrP, tOrV, (n_blocks - 1) % P_STAGES, v_get.index)
                if mwg == 0:
                    _turn_pass(mwg)  # warpgroup 1's last pass would have no one to take it
                warpgroup.wait_group(0)
                v_pipe.consumer_release(v_get)
                v_get.advance()

                # O / l, rounded to bfloat16, rows past the sequence dropped.
                for r in cutlass.range_constexpr(2):
                    inv[r] = 1.0 / _quad_reduce(row_sum[r], lambda a, b: a + b)
                gO = cute.local_tile(mO[None, None, bh], (BM, D), (pid_m, 0))
                tOgO = thr_pv.partition_C(gO)
                for i in cutlass.range_constexpr(cute.size(acc_o)):
                    row, _ = tOcO[i]
                    if row0 + row < S:
                        tOgO[i] = (acc_o[i] * inv[_row_half(i)]).to(cutlass.BFloat16)


def _units_per_head(q_blocks, causal: bool):
    """Work units per head: a query block, or (causal) a pair of them."""
    return (q_blocks + 1) // 2 if causal else q_blocks


def _tiles_in(i, q_blocks, causal: bool):
    """Query blocks in work unit i of a head: causal, blocks q_blocks - 1 - i and i (one when they are the same
    block, the middle of an odd count); otherwise one."""
    if causal:
        return cutlass.min(2, q_blocks - 2 * i)
    return 1


def _query_block(i, half, q_blocks, causal: bool):
    """The query block of work unit i's tile `half`: causal, the long one (q_blocks - 1 - i) first, then i."""
    if causal:
        return q_blocks - 1 - i + half * (2 * i - q_blocks + 1)
    return i


def _key_blocks(pid_m, S, causal: bool):
    """Key blocks query block pid_m reads: all, or (causal) those up to its diagonal."""
    n_blocks = (S + BN - 1) // BN
    if causal:
        n_blocks = cutlass.min(n_blocks, ((pid_m + 1) * BM + BN - 1) // BN)
    return n_blocks


@cute.jit
def attn_host(mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor, qk_scale: cutlass.Float32,
              causal: cutlass.Constexpr, sm_count: cutlass.Constexpr, stream: cuda.CUstream):
    """mQ, mK, mO: (S, D, B*H), D contiguous; mV: (D, S, B*H), D contiguous. sm_count: the grid's most CTAs."""
    S, D, BH = mQ.shape
    bf16, f32 = cutlass.BFloat16, cutlass.Float32
    k_major, mn_major = ROW_MAJOR.sm90_mma_major_mode(), COL_MAJOR.sm90_mma_major_mode()
    mma_qk = sm90_utils.make_trivial_tiled_mma(bf16, bf16, k_major, k_major, f32, (2, 1, 1), tiler_mn=(64, BN))
    mma_pv = sm90_utils.make_trivial_tiled_mma(bf16, bf16, k_major, mn_major, f32, (2, 1, 1), tiler_mn=(64, D))
    sQ_layout = sm90_utils.make_smem_layout_a(ROW_MAJOR, (BM, BN, D), bf16, 1)
    sK_layout = sm90_utils.make_smem_layout_b(ROW_MAJOR, (BM, BN, D), bf16, KV_STAGES)
    sP_layout = sm90_utils.make_smem_layout_a(ROW_MAJOR, (BM, D, BN), bf16, P_STAGES)
    sV_layout = sm90_utils.make_smem_layout_b(COL_MAJOR, (BM, D, BN), bf16, KV_STAGES)
    g2s = cpasync.CopyBulkTensorTileG2SOp()
    tma_q, tQ = cpasync.make_tiled_tma_atom(g2s, mQ, cute.slice_(sQ_layout, (None, None, 0)), (BM, D))
    tma_k, tK = cpasync.make_tiled_tma_atom(g2s, mK, cute.slice_(sK_layout, (None, None, 0)), (BN, D))
    tma_v, tV = cpasync.make_tiled_tma_atom(g2s, mV, cute.slice_(sV_layout, (None, None, 0)), (D, BN))
    storage = _storage(D)
    units = _units_per_head((S + BM - 1) // BM, causal) * BH
    attn_kernel(tma_q, tQ, tma_k, tK, tma_v, tV, mO, mma_qk, mma_pv, sQ_layout, sK_layout, sV_layout, sP_layout,
                qk_scale, causal, storage).launch(
        grid=[cutlass.min(units, sm_count) if causal or PERSISTENT_FULL else units, 1, 1], block=[THREADS, 1, 1],
        smem=storage.size_in_bytes(), stream=stream)


_compiled: dict = {}


def _views(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor) -> tuple:
    """(S, D, B*H) views of q, k, o and a (D, S, B*H) view of v: the tile modes first, the batch last."""
    B, H, S, D = q.shape
    sd = [from_dlpack(t.view(B * H, S, D).permute(1, 2, 0), assumed_align=16) for t in (q, k, o)]
    vt = from_dlpack(v.view(B * H, S, D).permute(2, 1, 0), assumed_align=16)
    return sd[0], sd[1], vt, sd[2]


def _sm_count(device: torch.device) -> int:
    """The grid's size: one CTA per SM (132 on an H100 SXM or H200 when there is no GPU, as when compiling on a CPU)."""
    if device.type != "cuda":
        return 132
    if device not in _sms:
        _sms[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _sms[device]


_sms: dict = {}


def compile_for(q, k, v, o, causal: bool, stream) -> object:
    """The compiled kernel for these shapes, strides, mask and SM count (compiled once, then cached)."""
    sms = _sm_count(q.device)
    key = (tuple(q.shape), q.stride(), k.stride(), v.stride(), q.dtype, bool(causal), sms)
    if key not in _compiled:
        scale = LOG2E / math.sqrt(q.shape[-1])
        _compiled[key] = cute.compile(attn_host, *_views(q, k, v, o), scale, bool(causal), sms, stream)
    return _compiled[key]


def kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    B, H, S, D = q.shape
    assert D in (16, 32, 64, 128), f"head dim {D} must be 16, 32, 64 or 128"
    q, k, v = (t.contiguous() for t in (q, k, v))  # the B*H views need dense [B, H, S, D]
    if S == 1:
        # A TMA view with a mode of size 1 faulted on the H200 ("illegal instruction" at S=1; S=2 ran right). One
        # key twice is the same attention (two equal scores share the weight, v is averaged with itself), so the
        # sequence is given as two copies of itself and the second query row is dropped.
        return kernel(*(t.expand(B, H, 2, D) for t in (q, k, v)), causal)[:, :, :1].contiguous()
    o = torch.empty_like(q)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    scale = LOG2E / math.sqrt(D)
    compile_for(q, k, v, o, causal, stream)(*_views(q, k, v, o), scale, stream)
    return o
