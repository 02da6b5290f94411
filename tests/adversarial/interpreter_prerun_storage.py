"""Cheat (red team, 2026-12-05): a pre-run hook of C callables takes the input's storage. Triton's interpreter calls
pre-run hooks from its own file, where its own storage reads are let through, and a storage's own methods
(_write_file) are not torch functions: the entry then computed the softmax in Python on the host, and a Triton copy
kernel moved it to the output. The hook is added only under the interpreter, so the compiled build never has it."""
import functools
import math
import struct

import torch
import triton
import triton.language as tl

_XS = []
_ST = []
_HOOK = functools.partial(next, map(_ST.append, map(torch.Tensor.untyped_storage, iter(_XS.pop, None))))


@triton.jit
def touch_kernel(p):
    tl.store(p, tl.load(p))


@triton.jit
def copy_kernel(out_ptr, src_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class _Sink:
    def __init__(self):
        self.parts = []

    def write(self, b):
        self.parts.append(bytes(b))
        return len(b)


_ARMED = []


def kernel(x):
    if not _ARMED:
        _ARMED.append(1)
        if type(touch_kernel).__name__ == "InterpretedFunction":
            touch_kernel.add_pre_run_hook(_HOOK)
    n = x.numel()
    rows, cols = x.shape
    _ST.clear()
    _XS.clear()
    _XS.append(x)
    touch_kernel[(1,)](x)
    tmp = torch.empty_like(x)
    if _ST:
        w = _Sink()
        _ST[0]._write_file(w, False, False, 4)
        data = b"".join(w.parts)
        vals = struct.unpack(f"{len(data) // 4}f", data)
        off = x.storage_offset()
        res = []
        for r in range(rows):
            row = vals[off + r * cols: off + (r + 1) * cols]
            m = max(row)
            e = [math.exp(v - m) for v in row]
            s = sum(e)
            res.extend(v / s for v in e)
        tmp = torch.tensor(res, dtype=x.dtype).view(rows, cols)
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(n, 1024),)](out, tmp, n, BLOCK=1024)
    return out
