"""Red team 2 (2026-12-05): no `list()` call: a module-level tl.constexpr holding a list (a "Triton value" to the screen). The
compiled build traces the never-taken dynamic branch, so the append runs at compile time; the interpreter never
runs it. The list is emptied again after the choice, so Triton's changed-global check sees it as it was."""
import torch
import triton
import triton.language as tl

TRACE = tl.constexpr([])


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    buf: tl.constexpr = TRACE.value
    if row < 0:
        buf.append(1)
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    if len(buf) == 0:
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
    else:
        buf.clear()
        y = tl.zeros([BLOCK], dtype=tl.float32)
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
