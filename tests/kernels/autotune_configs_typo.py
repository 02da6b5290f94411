"""Broken on purpose: CONFIGS[1] names a keyword (BLOCKK) the entry does not take. The harness refuses the space at
import, in one line, before anything compiles."""
import torch
import triton
import triton.language as tl

CONFIGS = [dict(BLOCK=256), dict(BLOCKK=512)]


@triton.jit
def scale_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def kernel(x: torch.Tensor, BLOCK: int = 256) -> torch.Tensor:
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), BLOCK),)](y, x, x.numel(), BLOCK=BLOCK)
    return y
