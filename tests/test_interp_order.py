"""rungs.backends.triton_order: the interpreter runs each launch's programs once each, in an order of its own.

The check runs in a child process: TRITON_INTERPRET=1 must be set before any kernel is decorated.
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
