"""Cheat: the host computes the softmax in numpy or Python after a token launch, reaching the input's values by
ROUTE (the test writes one file per route): .numpy(), .tolist(), np.asarray (__array__), np.from_dlpack
(__dlpack__) or a capsule from torch.utils.dlpack, the raw bytes of its storage, or element-by-element scalar reads. The aten trace sees none of them."""
import struct

import numpy as np
import torch
import triton
import triton.language as tl

ROUTE = "numpy"


@triton.jit
def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)


def _host_values(x):
    if ROUTE == "numpy":
        return x.numpy()
    if ROUTE == "tolist":
        return np.array(x.tolist(), dtype=np.float32)
    if ROUTE == "array":
        return np.asarray(x)
    if ROUTE == "dlpack":
        return np.from_dlpack(x)
    if ROUTE == "capsule":  # a dlpack capsule made by torch.utils.dlpack, handed to numpy
        capsule = torch.utils.dlpack.to_dlpack(x)

        class Wrapped:
            def __dlpack__(self, stream=None, **kw):
                return capsule

            def __dlpack_device__(self):
                return (1, 0)

        return np.from_dlpack(Wrapped())
    if ROUTE == "storage":
        raw = bytes(x.untyped_storage())
        return np.array(struct.unpack(f"{x.numel()}f", raw), dtype=np.float32).reshape(x.shape)
    if ROUTE == "items":
        return np.array([[float(x[i, j]) for j in range(x.shape[1])] for i in range(x.shape[0])], dtype=np.float32)
    raise ValueError(ROUTE)


def kernel(x):
    scratch = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, x, x.numel(), BLOCK=1024)
    a = _host_values(x)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    y = torch.empty_like(x)
    y.copy_(torch.from_numpy(e / e.sum(axis=-1, keepdims=True)))
    return y
