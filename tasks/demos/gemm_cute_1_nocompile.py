"""Matrix product C = A @ B in CuTe DSL, first try: 16 x 16 tiles of A and B staged in shared memory, one output
element per thread, the products accumulated in float32.

Does not compile: the float32 accumulator is stored straight into C, whose elements are bfloat16. CuTe DSL
does not convert on a store (`Type mismatch, store Float32 (-> Float32) to Tensor with element type
BFloat16`): the value must be converted with `.to(cutlass.BFloat16)` first.
"""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.utils as utils
import torch
from cutlass.cute.runtime import from_dlpack

T = 16  # a T x T thread block computes a T x T tile of C, one element per thread


@cute.kernel
def gemm_kernel(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    tx, ty, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    M, K = mA.shape
    N = mB.shape[1]
    row = by * T + ty
    col = bx * T + tx
    smem = utils.SmemAllocator()
    sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((T, T), stride=(T + 1, 1)))  # +1: no bank conflicts
    sB = smem.allocate_tensor(cutlass.Float32, cute.make_layout((T, T), stride=(T + 1, 1)))
    acc = cutlass.Float32(0.0)
    for kt in cutlass.range((K + T - 1) // T, unroll=1):
        k0 = kt * T
        a = cutlass.Float32(0.0)  # zeros outside the matrix add nothing to the dot product
        if row < M and k0 + tx < K:
            a = mA[row, k0 + tx].to(cutlass.Float32)
        b = cutlass.Float32(0.0)
        if k0 + ty < K and col < N:
            b = mB[k0 + ty, col].to(cutlass.Float32)
        sA[ty, tx] = a
        sB[ty, tx] = b
        cute.arch.sync_threads()
        for kk in cutlass.range_constexpr(T):
            acc += sA[ty, kk] * sB[kk, tx]
        cute.arch.sync_threads()
    if row < M and col < N:
        mC[row, col] = acc


@cute.jit
def gemm_host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
    M, N = mC.shape
    gemm_kernel(mA, mB, mC).launch(grid=[(N + T - 1) // T, (M + T - 1) // T, 1], block=[T, T, 1], stream=stream)


_compiled: dict = {}


def compile_for(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, stream) -> object:
    """The compiled kernel for these operands' shapes and strides (compiled once, then cached)."""
    key = (tuple(a.shape), tuple(b.shape), a.stride(), b.stride(), a.dtype)
    if key not in _compiled:
        _compiled[key] = cute.compile(gemm_host, from_dlpack(a), from_dlpack(b), from_dlpack(c), stream)
    return _compiled[key]


def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    compile_for(a, b, c, stream)(from_dlpack(a), from_dlpack(b), from_dlpack(c), stream)
    return c
