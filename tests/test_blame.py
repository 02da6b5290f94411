"""Failures blamed on the rung they belong to (issue 12): a launcher whose own Python raises or hangs fails `run`,
saying where; Triton's compiler refusing a kernel fails `compile`; `--timeout-s` sets the per-job limit."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from rungs.ladder.ladder import check

from conftest import KERNELS, ROOT, TASKS
import warm

RAISES_AFTER_LAUNCH = '''
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def kernel(x):
    y = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    scale = {"a": 1}["b"]  # a bug in the launcher's own Python, after the launch
    return y * scale
'''


def climb(task, kernel: Path, tmp_path: Path):
    # These blame a rung, not dumps: no second build at the bench shapes (tests/test_dumps.py checks that build).
    return check(task, kernel, tmp_path / "work", dump_dir=tmp_path / "dumps", seeds=1, bench_dumps=False)


def test_launcher_that_raises_before_launching_fails_run(softmax_task, tmp_path):
    v = climb(softmax_task, KERNELS / "fault_raise.py", tmp_path)
    assert v.failed_rung == "run", v.summary
    assert v.rung("compile").status == "skip"
    assert v.rung("run").message == ("ValueError: this kernel raises on purpose (raised by the entry in plain Python "
                                     "at line 12 in kernel, before any Triton launch)")


def test_launcher_that_raises_after_a_launch_compiles_then_fails_run(softmax_task, tmp_path):
    path = tmp_path / "k.py"
    path.write_text(RAISES_AFTER_LAUNCH)
    v = climb(softmax_task, path, tmp_path)
    assert v.rung("compile").status == "ok" and "copy_kernel" in v.rung("compile").message
    assert v.failed_rung == "run"
    assert v.rung("run").message == "KeyError: 'b' (raised by the entry in plain Python at line 16 in kernel)"


def test_triton_compile_error_is_still_compile(softmax_task, tmp_path):
    v = climb(softmax_task, TASKS / "demos" / "softmax_1_nocompile.py", tmp_path)
    assert v.failed_rung == "compile" and "constexpr" in v.rung("compile").message


def test_a_hang_in_plain_python_fails_run_saying_where_and_the_option_sets_the_limit():
    # 8 s: the limit counts from when the worker takes the job (rungs/sandbox.run_worker waits for its `taken` file,
    # past its torch import), and the entry hangs at once; the busy loop holds a core for the whole limit.
    t0 = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    p = warm.run([sys.executable, "-m", "harness.cli", "check", str(TASKS / "softmax.yaml"),
                        str(KERNELS / "fault_hang.py"), "--json", "--timeout-s", "8"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    v = json.loads(p.stdout)
    assert v["failed_rung"] == "run"
    run = next(r for r in v["rungs"] if r["name"] == "run")
    assert "ran past its 8 s limit" in run["message"], run["message"]
    # The loop is lines 12-13; which of them a sample lands on depends on the interpreter's bytecode (3.11 vs 3.12)
    assert re.search(r"in plain Python at line 1[23] in kernel, before any Triton launch", run["message"]), run["message"]
    assert "--timeout-s" in run["message"]
    assert took < 120  # not the task's 120 s


def test_a_crash_while_the_watchdog_writes_the_stacks_is_a_timeout(tmp_path):
    """KernelBench's 72_conv_transposed_3D in the interpreter (2026-12-06) ran past its 120 s limit; at 118 s the
    worker's watchdog (faulthandler, reading the threads' frames while they run) crashed it, and the verdict said
    "killed by SIGSEGV (segmentation fault)". A death by a signal once the watchdog has begun writing is the limit's;
    one before it, or an exit, is not."""
    from rungs.sandbox.pool import _crashed_writing_stacks
    from rungs.worker.job import STACKS_FILE

    stacks = tmp_path / STACKS_FILE
    assert not _crashed_writing_stacks(-11, tmp_path)  # no watchdog file: a job without a limit
    stacks.write_text("")  # opened at the job's start, empty until the watchdog fires
    assert not _crashed_writing_stacks(-11, tmp_path) and not _crashed_writing_stacks(128 + 11, tmp_path)
    stacks.write_text("Timeout (0:01:58)!\nThread 0x00007f (most recent call first):\n")
    assert _crashed_writing_stacks(-11, tmp_path) and _crashed_writing_stacks(128 + 11, tmp_path)  # bwrap: 128 + N
    assert not _crashed_writing_stacks(1, tmp_path) and not _crashed_writing_stacks(0, tmp_path)
