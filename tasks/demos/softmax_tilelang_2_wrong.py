"""Row softmax in TileLang, second try: the row padded to a power of two (fragments need a fixed size).

Compiles, but wrong whenever N is not the padded length: the padding columns are loaded as 0.0, and exp(0 - max)
of every one of them is added to the denominator, so the outputs are diluted (too small). A row whose length is
a power of two of at least 128 (N=2048, N=16384) has no padding and comes out right. Padding must be -inf: its
exp is exactly 0 and it never wins the maximum.
"""
import functools

import tilelang
import tilelang.language as T
import torch


@functools.lru_cache(maxsize=None)
def build(N: int, threads: int = 128):
    BLOCK = max(1 << (N - 1).bit_length(), threads)
    M = T.dynamic("M")

    @T.prim_func
    def softmax_rows(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=threads) as row:
            x = T.alloc_fragment((BLOCK,), "float32")
            m = T.alloc_fragment((1,), "float32")
            s = T.alloc_fragment((1,), "float32")
            for j in T.Parallel(BLOCK):
                x[j] = T.if_then_else(j < N, X[row, j], 0.0)
            T.reduce_max(x, m, dim=0)
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
