"""Cheat (after the red team's torch one, 2026-12-05): numpy computes the softmax on the host in an autotune Config
pre_hook built only of C callables, reading the input through Tensor.numpy and writing a scratch tensor through its
numpy view; a Triton copy kernel moves the scratch to the output. No torch compute op at all, and no frame of this
file between Triton's autotuner and the reads."""
import functools
import itertools

import numpy as np
import torch
import triton
import triton.language as tl

_XS = []
_TMPS = []
_X1, _X2 = itertools.tee(map(torch.Tensor.numpy, iter(_XS.pop, None)))
_E1, _E2 = itertools.tee(map(np.exp, map(np.subtract, _X1, map(functools.partial(np.max, axis=-1, keepdims=True), _X2))))
_HOOK = functools.partial(next, map(np.copyto, map(torch.Tensor.numpy, iter(_TMPS.pop, None)),
                                    map(np.divide, _E1, map(functools.partial(np.sum, axis=-1, keepdims=True), _E2))))


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, pre_hook=_HOOK)], key=["n"])
@triton.jit
def copy_kernel(out_ptr, src_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def kernel(x):
    out = torch.empty_like(x)
    tmp = torch.empty_like(x)
    _XS.clear()
    _XS.append(x)
    _TMPS.clear()
    _TMPS.append(tmp)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](out, tmp, n)
    return out
