"""Red team 2026-12-07, fourth round: `create_exp` set on the interpreter's builder instance (not its class), computing
exp(2y), in the run phase only; the body computes softmax(x / 2): right in the interpreter, x / 2 in the sm_90a
build. A library object's attributes are watched now, one level down (rungs/backends/triton_namespaces.py)."""
import numpy as np
import torch
import triton
import triton.language as tl

_held = []


def _exp2x(arg):
    return _held[0].unary_op(arg, lambda d: np.exp(d + d))


for _rt in (triton.runtime,):
    _ip = getattr(_rt, "interpreter", None)
    if _ip is not None:
        for _b in (_ip.interpreter_builder,):
            _held.append(_b)
            _b.create_exp = _exp2x


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x * 0.5
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
