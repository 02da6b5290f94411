"""Writes the elementwise solutions of this folder (level1/<problem stem>.py) from one template: each is a
standalone Triton file, as `harness eval --solutions level1` reads them; run it again after changing the template.

    python3 benchmarks/kernelbench_solutions/make_elementwise.py
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent / "level1"

# stem: (what it computes, the Triton expression of y from x (float32), ModelNew's __init__ parameters,
#        the kernel's extra scalar parameters as (name, attribute))
PROBLEMS: dict[str, tuple[str, str, str, list[tuple[str, str]]]] = {
    "20_LeakyReLU": ("LeakyReLU", "tl.where(x > 0, x, x * slope)", "negative_slope: float = 0.01",
                     [("slope", "negative_slope")]),
    "21_Sigmoid": ("Sigmoid", "1.0 / (1.0 + tl.exp(-x))", "", []),
    "22_Tanh": ("Tanh", "_tanh(x)", "", []),
    "25_Swish": ("Swish, x * sigmoid(x)", "x / (1.0 + tl.exp(-x))", "", []),
    "26_GELU_": ("GELU (the erf form, torch's default)", "0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))", "", []),
    "27_SELU_": ("SELU", "1.0507009873554805 * tl.where(x > 0, x, 1.6732632423543772 * (tl.exp(x) - 1.0))", "", []),
    "28_HardSigmoid": ("HardSigmoid", "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)", "", []),
    "29_Softplus": ("Softplus (beta 1, threshold 20)",
                    "tl.where(x > 20.0, x, tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x))))", "", []),
    "30_Softsign": ("Softsign", "x / (1.0 + tl.abs(x))", "", []),
    "31_ELU": ("ELU", "tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0))", "alpha: float = 1.0", [("alpha", "alpha")]),
    "32_HardTanh": ("HardTanh to [-1, 1]", "tl.minimum(tl.maximum(x, -1.0), 1.0)", "", []),
    "88_MinGPTNewGelu": ("minGPT's tanh GELU",
                         "0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))", "", []),
}

TEMPLATE = '''"""{title} elementwise: one program per block of elements, flattened; memory bound (read once, write once).
Computed in float32 whatever the input dtype, stored in the input's. Written by make_elementwise.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _tanh(x):
    # tanh from one exp of a non-positive argument (no overflow; libdevice's tanh is not in the interpreter)
    t = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - t) / (1.0 + t)
    return tl.where(x < 0, -y, y)


@triton.jit
def elementwise_kernel(out_ptr, x_ptr, n{params}, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # int64: KernelBench's tensors pass 2**31
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = {expr}
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self{init}):
        super().__init__(){assign}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        elementwise_kernel[(triton.cdiv(n, BLOCK),)](out, x, n{args}, BLOCK=BLOCK)
        return out
'''


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for stem, (title, expr, init, scalars) in PROBLEMS.items():
        assign = "".join(f"\n        self.{attr} = {attr}" for _, attr in scalars)
        text = TEMPLATE.format(title=title, expr=expr, init=f", {init}" if init else "",
                               params="".join(f", {name}" for name, _ in scalars), assign=assign,
                               args="".join(f", float(self.{attr})" for _, attr in scalars))
        (HERE / f"{stem}.py").write_text(text)
        print(f"wrote {stem}.py")


if __name__ == "__main__":
    main()
