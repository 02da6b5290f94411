"""Row softmax in TileLang, tuned: threads scaled with the row, exp2 with log2(e) folded in, 16-byte accesses.

Why each choice:
- One block per row, the whole row in registers: it crosses DRAM once in and once out (8 bytes per element, the
  floor). For the bench's 8192 columns 256 threads hold 32 floats each.
- Rows whose length is already a power of two (the bench) are copied with T.copy, which TileLang vectorizes to
  128-bit loads and stores (LDG.E.128 / STG.E.128 in the SASS); other lengths are padded with -inf and masked.
- More threads for longer rows put more loads in flight: a memory-bound kernel needs that to reach bandwidth.
- exp2((x - max) * log2 e) = exp(x - max): one FFMA and one MUFU.EX2 per element, the scale fused.
"""
import functools

import tilelang
import tilelang.language as T
import torch

LOG2E = 1.4426950408889634


@functools.lru_cache(maxsize=None)
def build(N: int):
    threads = 128 if N <= 1024 else 256 if N <= 8192 else 512
    BLOCK = max(1 << (N - 1).bit_length(), threads)
    M = T.dynamic("M")

    @T.prim_func
    def softmax_rows(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=threads) as row:
            x = T.alloc_fragment((BLOCK,), "float32")
            m = T.alloc_fragment((1,), "float32")
            s = T.alloc_fragment((1,), "float32")
            if BLOCK == N:
                T.copy(X[row, 0:N], x)
            else:
                for j in T.Parallel(BLOCK):
                    x[j] = T.if_then_else(j < N, X[row, j], -T.infinity("float32"))
            T.reduce_max(x, m, dim=0)
            for j in T.Parallel(BLOCK):
                x[j] = T.exp2(x[j] * LOG2E - m[0] * LOG2E)
            T.reduce_sum(x, s, dim=0)
            for j in T.Parallel(BLOCK):
                x[j] = x[j] / s[0]
            if BLOCK == N:
                T.copy(x, Y[row, 0:N])
            else:
                for j in T.Parallel(BLOCK):
                    if j < N:
                        Y[row, j] = x[j]

    return tilelang.compile(softmax_rows)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    build(N)(x, y)
    return y
