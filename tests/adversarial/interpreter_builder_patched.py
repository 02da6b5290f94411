"""Red team 2026-12-07, second round: the interpreter's builder patched in the run phase only (reached through loop names
past the screen) so that exp(y) computes exp(2y); the body computes softmax(x / 2): right in the interpreter, x / 2 in
the sm_90a build, a CPU pass before every class of Triton's was watched (rungs/backends/triton_namespaces.py)."""
import numpy as np
import torch
import triton
import triton.language as tl


def _exp2x(self, arg):
    return self.unary_op(arg, lambda d: np.exp(d + d))


for _rt in (triton.runtime,):
    _ip = getattr(_rt, "interpreter", None)
    if _ip is not None:
        for _b in (_ip.InterpreterBuilder,):
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
