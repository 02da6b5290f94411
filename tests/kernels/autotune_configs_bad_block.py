"""Broken on purpose: CONFIGS[1] asks for a block of 300, which Triton refuses (tl.arange needs a power of two). The
compile rung fails and names the config; the default alone would compile."""
import torch
import triton
import triton.language as tl

CONFIGS = [dict(BLOCK=256), dict(BLOCK=300)]


@triton.jit
def scale_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def kernel(x: torch.Tensor, BLOCK: int = 256) -> torch.Tensor:
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), BLOCK),)](y, x, x.numel(), BLOCK=BLOCK)
    return y
