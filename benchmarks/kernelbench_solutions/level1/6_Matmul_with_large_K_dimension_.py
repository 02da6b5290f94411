"""C = A @ B with K much larger than M and N (256 x 524288 by 524288 x 256): split K. One program per (BLOCK_M,
BLOCK_N) tile of C and per KCHUNK-long slice of K writes its slice's partial tile; a second kernel sums the slices'
partials, a tree within each block of them. Written by hand, not by make_matmul.py: walking the whole K in one
accumulator, as the square matmul does, adds 524288 products into one float32 one after another, and on the H200
that missed the float64 reference by rel_l2 4.3e-5 (more than the 1e-5 float32 is held to; cuBLAS: 1.8e-7); it also
ran 16 programs on 132 SMs. fp32 in, fp32 accumulate (IEEE, not TF32: the reference is float64)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

KCHUNK = 2048


@triton.jit
def matmul_slice_kernel(p_ptr, a_ptr, b_ptr, M, N, K, sam, sak, sbk, sbn,
                        KCHUNK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    s = tl.program_id(2)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, KCHUNK, BLOCK_K):
        rk = s * KCHUNK + k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * sam + rk[None, :].to(tl.int64) * sak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None].to(tl.int64) * sbk + rn[None, :].to(tl.int64) * sbn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    base = s.to(tl.int64) * M * N
    tl.store(p_ptr + base + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


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
        N = B.shape[1]
        S = triton.cdiv(K, KCHUNK)
        partial = torch.empty((S, M, N), dtype=torch.float32, device=A.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64), S)
        matmul_slice_kernel[grid](partial, A, B, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                  KCHUNK=KCHUNK, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        C = torch.empty((M, N), dtype=A.dtype, device=A.device)
        block_s = min(64, triton.next_power_of_2(S))
        sum_slices_kernel[(triton.cdiv(M * N, 128),)](C, partial, S, M * N, BLOCK=128, BLOCK_S=block_s)
        return C
