"""Red team 2026-12-07: a kernel made in a function whose local SCALE shadows a global SCALE: the compiler reads the
closure (0.5), the interpreter runs the body in the module's globals (1.0). No Python in the body at all; a CPU pass
before a jit function with closure variables was refused where the run is the interpreter."""
import torch
import triton
import triton.language as tl

SCALE = tl.constexpr(1.0)


def _make():
    SCALE = tl.constexpr(0.5)

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
        x = x * SCALE
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)

    return softmax_kernel


softmax_kernel = _make()


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
