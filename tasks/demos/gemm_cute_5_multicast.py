"""Matrix product C = A @ B in CuTe DSL for Hopper, gemm_cute_4_fast with 2-CTA clusters: the two CTAs of a cluster
compute vertically adjacent 128 x 256 tiles, which need the same 256-column panel of B, and load it once between
them with TMA multicast (each loads half of the B tile and writes it into both CTAs' shared memory).

Why: per K step a CTA brings 16 KiB of A and 32 KiB of B from L2 for 4.2 MFLOP; at 750 TFLOP/s over 132 SMs that is
about 8.6 TB/s out of L2, near what it gives, where cuBLAS runs ahead. Shared B makes it 16 + 16 KiB a CTA, a third
less. What changes from gemm_cute_4_fast:
- launched with cluster (2, 1, 1); the persistent loop walks cluster tiles (pairs of tile rows in one tile column,
  in the grouped order, GROUP_M pairs a group), the CTA of rank r taking tile row 2 * pair + r, so both CTAs of a
  cluster run the same tiles' K loops in step; the grid is as many clusters as SM pairs (66 on an H200, whose SMs
  come in pairs within each GPC: all can be resident at once);
- B's TMA atom is the multicast one; each CTA loads the half of the B tile its rank names, to both CTAs (mask by
  `make_layout_image_mask` on the cluster layout); A is the CTA's own, as before;
- a stage's "empty" barrier waits for the consumer warps of both CTAs (16 arrivals: each warp releases the stage in
  both, since the other CTA's TMA writes into it), and the barriers are initialised before a cluster-wide sync;
- a CTA whose tile row lies past M (the last pair when the tile rows are odd) still loads and waits in step, and
  stores nothing.
Kept: 128 x 256 x 64 tiles, two MMA warpgroups and a producer warpgroup (setmaxnreg 40 / 232), four stages,
wait_group(1) with the stage before handed back, grouped tile order, padding for unaligned strides, the epilogue.
Built for sm_90a on a CPU; not yet run on a GPU.
"""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
import cutlass.utils.hopper_helpers as sm90_utils
import torch
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cute.runtime import from_dlpack

BM, BN, BK = 128, 256, 64
CLUSTER_M = 2  # CTAs of a cluster, stacked along M: they share B's tile column
STAGES = 4
GROUP_M = 4  # rows of cluster tiles a group walks down: 8 tile rows, gemm_cute_4_fast's band
MMA_THREADS = 256  # two MMA warpgroups, one per 64-row half of the tile
THREADS = 128 + MMA_THREADS  # plus one producer warpgroup
PRODUCER_REGS, MMA_REGS = 40, 232  # setmaxnreg split: 128 * 40 + 256 * 232 <= 64K registers
ALIGN = 8  # elements per 16 bytes: the stride alignment TMA needs


@cute.struct
class SharedStorage:
    barriers: cute.struct.MemRange[cutlass.Int64, STAGES * 2]  # full and empty mbarrier per stage
    sA: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BM * BK * STAGES], 1024]
    sB: cute.struct.Align[cute.struct.MemRange[cutlass.BFloat16, BN * BK * STAGES], 1024]


def _tile_coords(t, tiles_m: int, tiles_n: int) -> tuple:
    """Grouped order: tile t walks down GROUP_M tile rows, then moves one tile column right (here over cluster
    tiles: a row of them is CLUSTER_M tile rows)."""
    per_group = GROUP_M * tiles_n
    first_m = (t // per_group) * GROUP_M
    group_rows = cutlass.min(tiles_m - first_m, GROUP_M)
    return first_m + (t % per_group) % group_rows, (t % per_group) // group_rows


@cute.kernel
def gemm_kernel(tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor, mC: cute.Tensor,
                tiled_mma: cute.TiledMma, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout):
    tidx, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    ctas, _, _ = cute.arch.grid_dim()
    cluster = bid // CLUSTER_M  # a 1-D grid in clusters of CLUSTER_M consecutive blocks
    clusters = ctas // CLUSTER_M
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
    cta_layout = cute.make_layout((CLUSTER_M, 1, 1))
    b_mask = cute.make_layout_image_mask(cta_layout, cta_layout.get_flat_coord(rank), mode=0)  # CTAs sharing B
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    wg = cute.arch.make_warp_uniform(tidx // 128)
    if warp == 0:
        cpasync.prefetch_descriptor(tma_a)
        cpasync.prefetch_descriptor(tma_b)

    M, N = mC.shape
    tiles_m = (M + BM - 1) // BM
    tiles_n = (N + BN - 1) // BN
    pairs_m = (tiles_m + CLUSTER_M - 1) // CLUSTER_M  # cluster tiles down M
    smem = utils.SmemAllocator()
    storage = smem.allocate(SharedStorage)
    pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=storage.barriers.data_ptr(), num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        # one arrive per consumer warp per CTA whose TMA writes into this stage (this one and the B partner)
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, CLUSTER_M * MMA_THREADS // 32),
        tx_count=(BM + BN) * BK * 2, cta_layout_vmnk=cute.make_layout((1, CLUSTER_M, 1, 1)), defer_sync=True)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()  # every CTA's barriers exist before any multicast writes into them
    cute.arch.cluster_wait()

    sA = storage.sA.get_tensor(sA_layout.outer, swizzle=sA_layout.inner)  # (BM, BK, STAGES)
    sB = storage.sB.get_tensor(sB_layout.outer, swizzle=sB_layout.inner)  # (BN, BK, STAGES)
    tile = (BM, BN, BK)
    k_tiles = cute.ceil_div(mA.shape[1], BK)

    if wg == 0:
        # Producer warpgroup: one thread of warp 0 issues every TMA load, for all of this CTA's tiles in turn,
        # so the loads of the next tile overlap the epilogue of this one.
        cute.arch.setmaxregister_decrease(PRODUCER_REGS)
        if warp == 0:
            produce = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            for u in cutlass.range(cluster, pairs_m * tiles_n, clusters, unroll=1):
                pair_m, pid_n = _tile_coords(u, pairs_m, tiles_n)
                pid_m = pair_m * CLUSTER_M + rank
                gA = cute.local_tile(mA, tile, (pid_m, pid_n, None), proj=(1, None, 1))  # (BM, BK, k tiles)
                gB = cute.local_tile(mB, tile, (pid_m, pid_n, None), proj=(None, 1, 1))  # (BN, BK, k tiles)
                tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1),
                                                   cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
                # B: this CTA's share of the tile (by its rank), multicast to both CTAs
                tBsB, tBgB = cpasync.tma_partition(tma_b, rank, cute.make_layout(CLUSTER_M),
                                                   cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
                for kt in cutlass.range(k_tiles, unroll=1):
                    pipe.producer_acquire(produce)
                    cute.copy(tma_a, tAgA[(None, kt)], tAsA[(None, produce.index)],
                              tma_bar_ptr=pipe.producer_get_barrier(produce))
                    cute.copy(tma_b, tBgB[(None, kt)], tBsB[(None, produce.index)],
                              tma_bar_ptr=pipe.producer_get_barrier(produce), mcast_mask=b_mask)
                    pipe.producer_commit(produce)
                    produce.advance()
            pipe.producer_tail(produce)  # every stage handed back before this warp exits
    else:
        # Two MMA warpgroups, 64 rows of the tile each. wgmma operands are per warpgroup (shared-memory
        # descriptors), the accumulator per thread.
        cute.arch.setmaxregister_increase(MMA_REGS)
        mma_tidx = tidx - 128
        wg_mma = tiled_mma.get_slice((wg - 1) * 128)
        tCrA = tiled_mma.make_fragment_A(wg_mma.partition_A(sA))  # (MMA, MMA_M, MMA_K, STAGES)
        tCrB = tiled_mma.make_fragment_B(wg_mma.partition_B(sB))
        thr_mma = tiled_mma.get_slice(mma_tidx)
        k_blocks = cute.size(tCrA, mode=[2])
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        consume = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
        for u in cutlass.range(cluster, pairs_m * tiles_n, clusters, unroll=1):
            pair_m, pid_n = _tile_coords(u, pairs_m, tiles_n)
            pid_m = pair_m * CLUSTER_M + rank
            gC = cute.local_tile(mC, tile, (pid_m, pid_n, None), proj=(1, 1, None))  # (BM, BN)
            tCgC = thr_mma.partition_C(gC)
            acc = cute.make_rmem_tensor(tCgC.shape, cutlass.Float32)
            acc.fill(0.0)
            for kt in cutlass.range(k_tiles, unroll=1):
                pipe.consumer_wait(consume)
                warpgroup.fence()
                for kb in cutlass.range_constexpr(k_blocks):
                    cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, consume.index)],
                              tCrB[(None, None, kb, consume.index)], acc)
                warpgroup.commit_group()
                consume.advance()
                # The wgmmas of step kt may still run; those of step kt - 1 are done: hand their stage back.
                warpgroup.wait_group(1)
                if kt > 0:
                    pipe.consumer_release(release)
                    release.advance()
            warpgroup.wait_group(0)
            pipe.consumer_release(release)  # the tile's last stage
            release.advance()

            # Epilogue: round to bfloat16 and store what lies inside C.
            out = cute.make_rmem_tensor(tCgC.shape, cutlass.BFloat16)
            out.store(acc.load().to(cutlass.BFloat16))
            if (pid_m + 1) * BM <= M and (pid_n + 1) * BN <= N:
                cute.autovec_copy(out, tCgC)
            else:
                cC = cute.local_tile(cute.make_identity_tensor(mC.shape), (BM, BN), (pid_m, pid_n))
                tCcC = thr_mma.partition_C(cC)
                for i in cutlass.range_constexpr(cute.size(out)):
                    if cute.elem_less(tCcC[i], mC.shape):
                        tCgC[i] = out[i]


@cute.jit
def gemm_host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, sms: cutlass.Constexpr, stream: cuda.CUstream):
    """mA (M, K) K-major, mB (N, K) N-major (B as stored, [K, N] row-major), mC (M, N) N-major."""
    a_layout = utils.LayoutEnum.from_tensor(mA)
    b_layout = utils.LayoutEnum.from_tensor(mB)
    tiled_mma = sm90_utils.make_trivial_tiled_mma(
        cutlass.BFloat16, cutlass.BFloat16, a_layout.sm90_mma_major_mode(), b_layout.sm90_mma_major_mode(),
        cutlass.Float32, (2, 1, 1), tiler_mn=(64, BN))
    sA_layout = sm90_utils.make_smem_layout_a(a_layout, (BM, BN, BK), cutlass.BFloat16, STAGES)
    sB_layout = sm90_utils.make_smem_layout_b(b_layout, (BM, BN, BK), cutlass.BFloat16, STAGES)
    tma_a, tA = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA,
                                            cute.slice_(sA_layout, (None, None, 0)), (BM, BK))
    tma_b, tB = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), mB,
                                            cute.slice_(sB_layout, (None, None, 0)), (BN, BK), num_multicast=CLUSTER_M)
    M, N = mC.shape
    pairs = (M + BM * CLUSTER_M - 1) // (BM * CLUSTER_M) * ((N + BN - 1) // BN)
    grid = (min(pairs, sms // CLUSTER_M) * CLUSTER_M, 1, 1)  # persistent: one cluster per SM pair at most
    gemm_kernel(tma_a, tA, tma_b, tB, mC, tiled_mma, sA_layout, sB_layout).launch(
        grid=grid, block=[THREADS, 1, 1], cluster=[CLUSTER_M, 1, 1], smem=SharedStorage.size_in_bytes(),
        stream=stream)


_compiled: dict = {}


def _operands(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple:
    """CuTe views: A as (M, K), B as (N, K) with N contiguous, C as (M, N); 16-byte aligned for TMA."""
    return tuple(from_dlpack(t, assumed_align=16) for t in (a, b.t(), c))


def compile_for(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, stream, sms: int = 132) -> object:
    """The compiled kernel for these operands' shapes and strides and this many SMs (an H200 has 132)."""
    key = (tuple(a.shape), tuple(b.shape), a.stride(), b.stride(), a.dtype, sms)
    if key not in _compiled:
        _compiled[key] = cute.compile(gemm_host, *_operands(a, b, c), sms, stream)
    return _compiled[key]


def _pad(t: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    if t.shape == (rows, cols):
        return t.contiguous()
    out = torch.zeros((rows, cols), dtype=t.dtype, device=t.device)
    out[: t.shape[0], : t.shape[1]] = t
    return out


def prepare(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A and B padded (with zeros) to row lengths TMA accepts, and the C they are written into: [M, N] rounded
    up to a multiple of 8 columns. A single row of A is padded to two: a TMA view with a mode of size 1 faulted on
    the H200 ("illegal instruction" at M=1; M=2 ran right)."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {a.shape} @ {b.shape}"
    Kp, Np, Mp = -(-K // ALIGN) * ALIGN, -(-N // ALIGN) * ALIGN, max(M, 2)
    return _pad(a, Mp, Kp), _pad(b, Kp, Np), torch.empty((Mp, Np), dtype=a.dtype, device=a.device)


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    N = b.shape[1]
    a_p, b_p, c = prepare(a, b)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    # Every SM pair holds a cluster at once (H200: 66; its SMs come in pairs within each GPC). CuTe's own query
    # (HardwareInfo.get_max_active_clusters) compiles a kernel of its own to ask, which would count as this entry's.
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    compile_for(a_p, b_p, c, stream, sms)(*_operands(a_p, b_p, c), stream)
    M = a.shape[0]
    return c if c.shape == (M, N) else c[:M, :N].contiguous()
