"""Row softmax in TileLang, first try: one block per row, the row in registers, block-wide reductions.

Does not compile: the row maximum is `T.reduce_maximum`, which TileLang does not have (its reductions are
T.reduce_max, T.reduce_sum, T.reduce_min, T.reduce_abssum); the program fails while T.prim_func parses it.
"""
import functools

import tilelang
import tilelang.language as T
import torch


@functools.lru_cache(maxsize=None)
def build(N: int, threads: int = 128):
    BLOCK = N
    M = T.dynamic("M")

    @T.prim_func
    def softmax_rows(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=threads) as row:
            x = T.alloc_fragment((BLOCK,), "float32")
            m = T.alloc_fragment((1,), "float32")
            s = T.alloc_fragment((1,), "float32")
            for j in T.Parallel(BLOCK):
                x[j] = X[row, j]
            T.reduce_maximum(x, m, dim=0)
            for j in T.Parallel(BLOCK):
                x[j] = T.exp(x[j] - m[0])
            T.reduce_sum(x, s, dim=0)
            for j in T.Parallel(BLOCK):
                if j < N:
                    Y[row, j] = x[j] / s[0]

    return tilelang.compile(softmax_rows)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    build(N)(x, y)
    return y
