"""C = A @ B for a (M, K) matrix and a (K, 1) vector, K = 1048576: a matrix-vector product, so no tensor-core tile
(a 64 x 64 tile with one live column does 64 times the work). One program per BLOCK_M rows and per KCHUNK-long
slice of K sums its rows' products (a tree within each BLOCK_K block); a second kernel sums the slices. Written by
hand, not by make_matmul.py: the square matmul's kernel on this problem added K = 1048576 products into one float32
accumulator one after another, which on the H200 missed the float64 reference by 1.6e-4 (outside KernelBench's own
1e-4). Memory-bound: A (8 GiB) is read once."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

KCHUNK = 8192


@triton.jit
def gemv_slice_kernel(p_ptr, a_ptr, b_ptr, M, K, sam, sak, sbk,
                      KCHUNK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    s = tl.program_id(1)
    acc = tl.zeros([BLOCK_M], tl.float32)
    for k0 in range(0, KCHUNK, BLOCK_K):
        rk = s * KCHUNK + k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * sam + rk[None, :].to(tl.int64) * sak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk.to(tl.int64) * sbk, mask=rk < K, other=0.0)
        acc += tl.sum(a * b[None, :], axis=1)
    tl.store(p_ptr + s.to(tl.int64) * M + rm, acc, mask=rm < M)


@triton.jit
def sum_slices_kernel(c_ptr, p_ptr, S, MN, BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for s0 in range(0, S, BLOCK_S):
        rs = s0 + tl.arange(0, BLOCK_S)
        p = tl.load(p_ptr + rs[:, None].to(tl.int64) * MN + offs[None, :],
                    mask=(rs[:, None] < S) & (offs[None, :] < MN), other=0.0)
        acc += tl.sum(p, axis=0)
    tl.store(c_ptr + offs, acc, mask=offs < MN)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        S = triton.cdiv(K, KCHUNK)
        partial = torch.empty((S, M), dtype=torch.float32, device=A.device)
        gemv_slice_kernel[(triton.cdiv(M, 16), S)](partial, A, B, M, K, A.stride(0), A.stride(1), B.stride(0),
                                                  KCHUNK=KCHUNK, BLOCK_M=16, BLOCK_K=256)
        C = torch.empty((M, 1), dtype=A.dtype, device=A.device)
        block_s = min(64, triton.next_power_of_2(S))
        sum_slices_kernel[(triton.cdiv(M, 128),)](C, partial, S, M, BLOCK=128, BLOCK_S=block_s)
        return C
