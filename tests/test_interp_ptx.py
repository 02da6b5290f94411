"""Where Triton's CPU interpreter now rounds and flushes as the sm_90a build does (rungs.backends.triton_ptx): fused
multiply-adds in float16, float32 and float64, through a splat of the product, and not where the launch turns fusion
off; floor, ceil, sin and erf of a subnormal (flushed to zero by the build's .ftz instructions).

Each expected value is the PTX instruction's, worked out here with exact rational arithmetic (fractions.Fraction:
float() of a Fraction rounds to nearest even, once), not read from the interpreter. One child process runs them all:
TRITON_INTERPRET=1 must be set before any kernel is decorated.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json
import torch, triton, triton.language as tl
from rungs.backends import triton_interp, triton_ptx

@triton.jit
def fused(a_ptr, c_ptr, out_ptr, B: tl.constexpr):
    # a * a - c with the product a scalar splat over the block (red team 2026-12-07: the splat lost the product)
    a = tl.load(a_ptr)
    c = tl.load(c_ptr + tl.arange(0, B))
    tl.store(out_ptr + tl.arange(0, B), a * a - c)

@triton.jit
def unary(x_ptr, out_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    tl.store(out_ptr + o, tl.ceil(x))
    tl.store(out_ptr + B + o, tl.floor(-x))
    tl.store(out_ptr + 2 * B + o, tl.sin(x))
    tl.store(out_ptr + 3 * B + o, tl.erf(x))

triton_interp.install()
triton_ptx.install()
out = {}
for name, dtype, a, c in (("fp32", torch.float32, 1 + 2**-12, [1 + 2**-11, -(2**-80)]),
                          ("fp16", torch.float16, 1 + 2**-6, [1 + 2**-5, -(2**-20)]),
                          ("fp64", torch.float64, 1 + 2**-30, [1 + 2**-29, 1 + 2**-29]),
                          ("bf16", torch.bfloat16, 1 + 2**-4, [1 + 2**-3, -(2**-40)])):
    at, ct = torch.tensor([a], dtype=dtype), torch.tensor(c, dtype=dtype)
    y = torch.empty(2, dtype=dtype)
    fused[(1,)](at, ct, y, 2)
    z = torch.empty(2, dtype=dtype)
    fused[(1,)](at, ct, z, 2, enable_fp_fusion=False)
    out[name] = [y.double().tolist(), z.double().tolist(), ct.double().tolist(), at.double().item()]
@triton.jit
def square_arg(s, out_ptr):
    tl.store(out_ptr, s * s)

sq = torch.empty(1, dtype=torch.float32)
square_arg[(1,)](0.1, sq)
out["float_arg"] = sq.double().item()
x = torch.tensor([1e-44, 1e-40, 2.0**-126, 0.5], dtype=torch.float32)
u = torch.empty(16, dtype=torch.float32)
unary[(1,)](x, u, 4)
out["unary"] = u.double().tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def results() -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


BITS = {np.float16: (11, -14), np.float32: (24, -126), np.float64: (53, -1022), "bf16": (8, -126)}
"""Significand bits and the smallest normal exponent of each type."""


def _round(value: Fraction, dtype: type) -> float:
    """`value` rounded once to `dtype`, to nearest even (not through float64 first: that would round twice)."""
    if value == 0:
        return 0.0
    bits, min_exp = BITS[dtype]
    exp = max(abs(value.numerator).bit_length() - abs(value.denominator).bit_length(), min_exp)
    while Fraction(2) ** exp > abs(value):  # the exponent of the leading bit, at least the smallest normal's
        exp -= 1
    exp = max(exp, min_exp)
    ulp = Fraction(2) ** (exp - bits + 1)
    q, rest = divmod(value / ulp, 1)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and q % 2 == 1):
        q += 1
    return float(q * ulp)


@pytest.mark.parametrize("name, dtype", [("fp32", np.float32), ("fp16", np.float16), ("fp64", np.float64),
                                         ("bf16", "bf16")])
def test_a_product_splat_into_a_subtract_is_fused_unless_the_launch_says_not(results, name, dtype):
    fused, apart, c, a = results[name]
    # fma.rn: the exact a*a - c rounded once
    assert fused == [_round(Fraction(a) * Fraction(a) - Fraction(ci), dtype) for ci in c]
    # enable_fp_fusion=False: mul.rn then sub.rn, two roundings
    product = _round(Fraction(a) * Fraction(a), dtype)
    assert apart == [_round(Fraction(product) - Fraction(ci), dtype) for ci in c]
    assert fused[0] != apart[0]  # the values were picked so the two differ: the test can tell them apart


def test_fp32_fused_value_rounds_once_where_float64_would_round_twice(results):
    """(1 + 2**-12)**2 + 2**-80 is 1 + 2**-11 + 2**-24 + 2**-80: just above a float32 halfway point, so fma.rn gives
    1 + 2**-11 + 2**-23. Summed in float64 first (as this patch did before 2026-12-07), the 2**-80 is lost, the
    halfway point rounds to even, and the result is 1 + 2**-11."""
    fused, _, _, _ = results["fp32"]
    assert fused[1] == 1 + 2**-11 + 2**-23


def test_floor_ceil_sin_erf_flush_a_subnormal_input(results):
    """cvt.rpi.ftz / cvt.rmi.ftz and libdevice's ftz paths: 1e-44 and 1e-40 are zero to them; 2**-126 (the smallest
    normal) and 0.5 are not. numpy's ceil(1e-44) is 1 (red team 2026-12-07)."""
    u = results["unary"]
    ceil, floor_neg, sin, erf = u[0:4], u[4:8], u[8:12], u[12:16]
    assert ceil == [0.0, 0.0, 1.0, 1.0]
    assert floor_neg == [0.0, 0.0, -1.0, -1.0]
    assert sin[:2] == [0.0, 0.0] and sin[2] == pytest.approx(2.0**-126) and sin[3] == pytest.approx(np.sin(0.5))
    assert erf[:2] == [0.0, 0.0] and erf[2] > 0


def test_a_float_argument_is_an_fp32_scalar_as_in_the_build(results):
    """The build types a Python float argument fp32 and squares it with mul.f32; the interpreter squared the Python
    float (0.0099999998 for 0.1, where the build gives 0.010000001)."""
    s = _round(Fraction(0.1), np.float32)
    assert results["float_arg"] == _round(Fraction(s) * Fraction(s), np.float32) != float(np.float32(0.1 * 0.1))


def test_bf16_fused_value_rounds_once(results):
    """(1 + 2**-4)**2 + 2**-40 is 1 + 2**-3 + 2**-8 + 2**-40: just above a bfloat16 halfway point (its ulp at 1 is
    2**-7), so fma.rn.bf16 gives 1 + 2**-3 + 2**-7; an fma in float32 then rounded to bfloat16 gives 1 + 2**-3."""
    fused, _, _, _ = results["bf16"]
    assert fused[1] == 1 + 2**-3 + 2**-7
