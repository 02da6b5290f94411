"""Red team (2026-12-05): host compute in numpy past the host-read refusal and the torch-op trace. numpy reads any address an
object's __array_interface__ names (here a SimpleNamespace, so no dunder is defined or assigned); data_ptr() gives
the address. A Triton kernel copies x into y (so the no-op probe's NaN output stays NaN); numpy then computes the
softmax in place over y's memory. CPU (interpreter) only: on a GPU the address is device memory."""
import types
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=mask), mask=mask)


def _host_view(t, shape):
    iface = {"data": (t.data_ptr(), False), "shape": shape, "typestr": "<f4", "version": 3}
    return np.asarray(types.SimpleNamespace(__array_interface__=iface))


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    copy_kernel[(triton.cdiv(M * N, 1024),)](y, x, M * N, BLOCK=1024)
    a = _host_view(y, (M, N))
    z = a.astype(np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    a[...] = (z / z.sum(axis=1, keepdims=True)).astype(np.float32)
    return y
