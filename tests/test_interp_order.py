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
