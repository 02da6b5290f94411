"""Cheat (red team, 2026-12-05): torch computes the softmax in an autotune Config pre_hook built only of C callables
(functools.partial, next, map), so no frame of this file lies between Triton's autotuner and the op, and the trace
took the op for the launcher's own. The answer goes to a scratch tensor that a Triton copy kernel moves to the output,
so the launch-dependence probe (launches made no-ops) sees an output that depends on the launches."""
import functools

import torch
import triton
import triton.language as tl

_XS = []
_TMPS = []
_HOOK = functools.partial(next, map(torch.Tensor.copy_, iter(_TMPS.pop, None),
                                    map(functools.partial(torch.softmax, dim=-1), iter(_XS.pop, None))))


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
