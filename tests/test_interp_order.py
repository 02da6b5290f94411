"""Where Triton's CPU interpreter now behaves as a GPU does: rungs.backends.triton_order (each launch's programs once
each, in an order of its own) and rungs.backends.triton_interp's float-to-int casts (PTX's cvt.rzi).

Each check runs in a child process: TRITON_INTERPRET=1 must be set before any kernel is decorated.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json
import torch, triton, triton.language as tl
from rungs.backends import triton_order

@triton.jit
def record(order_ptr, count_ptr):
    pid = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    slot = tl.atomic_add(count_ptr, 1)  # the how-manieth program this one was
    tl.store(order_ptr + slot, pid)

def run():
    order, count = torch.full((96,), -1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    record[(12, 8)](order, count)
    return order.tolist()

before = run()
triton_order.install()
triton_order.install()  # idempotent
print(json.dumps([before, run(), run()]))
"""


def _orders() -> list[list[int]]:
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_programs_run_once_each_in_a_new_order_every_launch():
    """Red team, 2026-12-05: a second program that read what the first wrote passed on a CPU, because the
    interpreter ran them in order of program id. Installed, every program still runs exactly once, in a drawn order
    (two launches alike, or in id order, have odds of 1 in 96!)."""
    before, first, second = _orders()
    assert before == list(range(96))  # what Triton's interpreter does by itself
    assert sorted(first) == sorted(second) == list(range(96))
    assert first != list(range(96)) and second != first


CAST = """
import json
import torch, triton, triton.language as tl
from rungs.backends.triton_interp import install

@triton.jit
def cast(x_ptr, i_ptr, u_ptr, n: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, n))
    tl.store(i_ptr + tl.arange(0, n), x.to(tl.int32))
    tl.store(u_ptr + tl.arange(0, n), x.to(tl.uint8))

install()
x = torch.tensor([float("nan"), 3e9, -3e9, -1.7, 2.9, 300.0, -5.0, 0.0])
i, u = torch.empty(8, dtype=torch.int32), torch.empty(8, dtype=torch.uint8)
cast[(1,)](x, i, u, 8)
print(json.dumps([i.tolist(), u.tolist()]))
"""


def test_float_to_int_casts_as_ptx_cvt_rzi():
    """Red team 2, 2026-12-05: numpy cast NaN to INT_MIN where a GPU gives 0, and a kernel branched on it. PTX's
    cvt.rzi: toward zero, clamped to the destination's range, NaN to 0."""
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CAST], env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ints, uints = json.loads(proc.stdout.strip().splitlines()[-1])
    assert ints == [0, 2**31 - 1, -2**31, -1, 2, 300, -5, 0]
    assert uints == [0, 255, 0, 0, 2, 255, 0, 0]


PTX = """
import json
import torch, triton, triton.language as tl
from rungs.backends import triton_interp, triton_ptx

@triton.jit
def conv(x_ptr, a_ptr, b_ptr, s_ptr, n: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, n))
    tl.store(a_ptr + tl.arange(0, n), x.to(tl.float8e4nv).to(tl.float32))
    tl.store(b_ptr + tl.arange(0, n), x.to(tl.float8e5).to(tl.float32))
    tl.store(s_ptr + tl.arange(0, n), tl.sqrt(tl.abs(x)))

@triton.jit
def hinted(x_ptr, y_ptr, n, BLOCK: tl.constexpr, CONST: tl.constexpr):
    offs = tl.max_contiguous(tl.multiple_of(tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), BLOCK), BLOCK)
    mask = tl.max_constancy(offs < n, CONST)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)

triton_interp.install()
triton_ptx.install()
torch.manual_seed(0)
x = torch.cat([torch.tensor([1000., float('nan'), float('inf'), -500., 464., 1e-40, 2.0**-17, 60000.]),
               torch.randn(248) * torch.logspace(-8, 3, 248)])
a, b, s = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
conv[(1,)](x, a, b, s, 256)
want_a = x.clamp(-448, 448).to(torch.float8_e4m3fn).float()
want_b = x.clamp(-57344, 57344).to(torch.float8_e5m2).float()
y = torch.zeros(100)
hinted[(4,)](torch.ones(100), y, 100, BLOCK=32, CONST=1)
try:
    hinted[(4,)](torch.ones(100), y, 100, BLOCK=32, CONST=8)  # 100 % 8 != 0: the last group mixes in and out
    false_hint = "accepted"
except Exception as exc:
    false_hint = str(exc)
print(json.dumps({"e4m3": bool(torch.equal(a.nan_to_num(7.0), want_a.nan_to_num(7.0))),
                  "e5m2": bool(torch.equal(b.nan_to_num(7.0), want_b.nan_to_num(7.0))),
                  "sqrt_subnormal": s[5].item(), "honest_hints": y.sum().item(), "false_hint": false_hint}))
"""


def test_the_interpreter_does_what_the_sm90a_build_does():
    """Red team 3, 2026-12-05, each read from the build's PTX: float8 conversions are cvt.rn.satfinite (rounded to
    nearest even, clamped to the largest finite; 0x7F is NaN), tl.sqrt is sqrt.approx.ftz (a subnormal input is 0),
    and hints the compiler builds on are checked against their values (true ones pass, a false one fails)."""
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PTX], env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["e4m3"] and got["e5m2"], got
    assert got["sqrt_subnormal"] == 0.0
    assert got["honest_hints"] == 100.0
    assert "tl.max_constancy" in got["false_hint"] and "is false" in got["false_hint"], got
