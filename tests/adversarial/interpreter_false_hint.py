"""Red team 3 (2026-12-05): false hints. `tl.multiple_of` / `tl.max_constancy` are ignored by the interpreter (they only tag the
value), so the loads there are exact; the sm_90a build trusts them: the row base `row * stride` is taken as a multiple
of 16 elements and the mask `offs < n_cols` as constant over runs of 16 columns, so it loads and stores 4 columns per
predicate with 16-byte vector accesses (ld/st.global.v4.b32). N=1023 or 4099 rows start at 4-byte-aligned addresses
only, and the last group of a row reads (and writes) past the row's end."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    in_base = tl.multiple_of(row * in_stride, 16)
    out_base = tl.multiple_of(row * out_stride, 16)
    offs = tl.arange(0, BLOCK)
    mask = tl.max_constancy(offs < n_cols, min(16, BLOCK))
    x = tl.load(in_ptr + in_base + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + out_base + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(M,)](y, x, N, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(N))
    return y
