"""Writes the row-wise solutions of this folder (level1/<problem stem>.py): a statistic over each row of a (B, D)
tensor in a first loop over the row's blocks, the output in a second; one program per row, float32 whatever the
input dtype. Run it again after changing the template.

    python3 benchmarks/kernelbench_solutions/make_rowwise.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"

# stem: (what it computes, the first loop's state, its update from the block x (masked values: `other`), what the
#        second loop writes from x, the masked loads' value, ModelNew's __init__ parameters)
PROBLEMS: dict[str, tuple[str, str, str, str, str, str]] = {
    "24_LogSoftmax": ("LogSoftmax over dim 1",
                      "m = tl.full([BLOCK], float('-inf'), tl.float32)\n    s = tl.zeros([BLOCK], tl.float32)",
                      "m_new = tl.maximum(m, x)\n"
                      "        s = s * tl.exp(m - m_new) + tl.where(x == float('-inf'), 0.0, tl.exp(x - m_new))\n"
                      "        m = m_new",
                      "x - shift", "float('-inf')", "dim: int = 1"),
    "38_L1Norm_": ("x / mean(|x|) over dim 1", "s = tl.zeros([BLOCK], tl.float32)", "s += tl.abs(x)",
                   "x / scale", "0.0", ""),
    "39_L2Norm_": ("x / ||x||_2 over dim 1", "s = tl.zeros([BLOCK], tl.float32)", "s += x * x",
                   "x / scale", "0.0", ""),
}
FINISH = {
    "24_LogSoftmax": "row_max = tl.max(m, axis=0)\n    total = tl.sum(tl.where(m == float('-inf'), 0.0, s * tl.exp(m - row_max)), axis=0)\n"
                     "    shift = row_max + tl.log(total)",
    "38_L1Norm_": "scale = tl.sum(s, axis=0) / d",
    "39_L2Norm_": "scale = tl.sqrt(tl.sum(s, axis=0))",
}

TEMPLATE = '''"""{title} of a (B, D) tensor: one program per row, a first loop over the row's blocks for the statistic (kept
per lane, combined at the end) and a second writing the output; float32 inside, the input's dtype out. Written by
make_rowwise.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def row_kernel(out_ptr, x_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * d
    {state}
    for c0 in range(0, d, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < d, other={other}).to(tl.float32)
        {update}
    {finish}
    for c0 in range(0, d, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < d, other=0.0).to(tl.float32)
        tl.store(out_ptr + row + cols, ({write}).to(out_ptr.dtype.element_ty), mask=cols < d)


class ModelNew(nn.Module):
    def __init__(self{init}):
        super().__init__(){assign}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D = x.shape
        out = torch.empty_like(x)
        row_kernel[(B,)](out, x, D, BLOCK=BLOCK)
        return out
'''


def main() -> None:
    for stem, (title, state, update, write, other, init) in PROBLEMS.items():
        assign = '\n        assert dim == 1, "this kernel works along dim 1"' if init.startswith("dim") else ""
        text = TEMPLATE.format(title=title, state=state, update=update, finish=FINISH[stem], write=write,
                               other=other, init=f", {init}" if init else "", assign=assign)
        (HERE / f"{stem}.py").write_text(text)
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
