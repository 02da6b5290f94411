"""Writes the scan solutions of this folder (level1/<problem stem>.py): cumulative sums and products along dim 1
of a (B, D) tensor, one program per row walking its blocks with the running total carried between them; the reverse
scan walks the row from its end (no `total - prefix`, whose cancellation would lose the small tail values), the
exclusive one scans the row shifted by one. Run it again after changing the template.

    python3 benchmarks/kernelbench_solutions/make_scan.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"

# stem: (what it computes, REVERSE, EXCLUSIVE, PROD, MASKED)
PROBLEMS = {
    "89_cumsum": ("cumsum", False, False, False, False),
    "90_cumprod": ("cumprod", False, False, True, False),
    "91_cumsum_reverse": ("cumsum from the end of each row", True, False, False, False),
    "92_cumsum_exclusive": ("exclusive cumsum (0 first, then the sums before each element)", False, True, False, False),
    "93_masked_cumsum": ("cumsum of x where the mask is set", False, False, False, True),
}

TEMPLATE = '''"""{title} along dim 1 of a (B, D) tensor: one program per row, blocks scanned in order with the running
value carried between them; float32 inside. Written by make_scan.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def scan_kernel(out_ptr, x_ptr, mask_ptr, d, REVERSE: tl.constexpr, EXCLUSIVE: tl.constexpr, PROD: tl.constexpr,
                MASKED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * d
    carry = 1.0 if PROD else 0.0
    for c0 in range(0, d, BLOCK):
        idx = c0 + tl.arange(0, BLOCK)  # position along the scan
        ok = idx < d
        cols = (d - 1 - idx) if REVERSE else idx  # where that position is in the row
        src = cols - 1 if EXCLUSIVE else cols  # the exclusive scan reads its left neighbour
        take = ok & (src >= 0)
        x = tl.load(x_ptr + row + src, mask=take, other=1.0 if PROD else 0.0).to(tl.float32)
        if MASKED:
            keep = tl.load(mask_ptr + row + src, mask=take, other=0)
            x = tl.where(keep != 0, x, 0.0)
        if PROD:
            y = tl.associative_scan(x, 0, _mul) * carry
            carry = carry * tl.reduce(x, 0, _mul)
        else:
            y = tl.cumsum(x, 0) + carry
            carry = carry + tl.sum(x, 0)
        tl.store(out_ptr + row + cols, y.to(out_ptr.dtype.element_ty), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        assert dim == 1, "this kernel scans dim 1"
        self.dim = dim

    def forward(self, {params}) -> torch.Tensor:
        x = x.contiguous()
        B, D = x.shape
        out = torch.empty_like(x)
        scan_kernel[(B,)](out, x, {mask_arg}, D, REVERSE={reverse}, EXCLUSIVE={exclusive}, PROD={prod},
                          MASKED={masked}, BLOCK=BLOCK)
        return out
'''


def main() -> None:
    for stem, (title, reverse, exclusive, prod, masked) in PROBLEMS.items():
        params = "x: torch.Tensor, mask: torch.Tensor" if masked else "x: torch.Tensor"
        mask_arg = "mask.contiguous().view(torch.uint8)" if masked else "x"
        (HERE / f"{stem}.py").write_text(TEMPLATE.format(title=title.capitalize() if title[0].islower() else title,
                                                         params=params, mask_arg=mask_arg, reverse=reverse,
                                                         exclusive=exclusive, prod=prod, masked=masked))
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
