"""`harness task new` and `harness task check` (issue 12): a task can be started from a template and validated
without writing a kernel; the template passes the whole ladder as written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, TASKS
import warm


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)  # run this checkout's code from another folder
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=300)


def test_new_task_checks_and_its_starter_kernel_passes(tmp_path):
    p = harness("task", "new", "mytask", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for name in ("mytask.yaml", "mytask_ref.py", "mytask_kernel.py"):
        assert (tmp_path / "tasks" / name).is_file()
    p = harness("task", "check", "tasks/mytask.yaml", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "task check: ok (tasks/mytask.yaml)" in p.stdout and "M=7 N=4099 float32" in p.stdout
    assert p.stderr == ""
    p = harness("check", "tasks/mytask.yaml", "tasks/mytask_kernel.py", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip().endswith("verdict: pass")
    # a second `new` of the same name refuses to overwrite
    p = harness("task", "new", "mytask", cwd=tmp_path)
    assert p.returncode == 2 and "--force" in p.stderr


def test_new_refuses_a_name_that_is_no_identifier(tmp_path):
    p = harness("task", "new", "my-task", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip() == "error: task name 'my-task': use lower case letters, digits and _, starting with a letter"


def test_check_a_shipped_task():
    p = harness("task", "check", str(TASKS / "gemm.yaml"), cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bench M=4096 N=4096 K=4096: 1.374e+11 FLOPs" in p.stdout
    assert "task check: ok" in p.stdout


def test_check_flags_a_degenerate_task(tmp_path):
    harness("task", "new", "weak", cwd=tmp_path)
    ref = tmp_path / "tasks" / "weak_ref.py"
    ref.write_text(ref.read_text().replace("return x * torch.sigmoid(x)", "return torch.zeros_like(x)"))
    p = harness("task", "check", "tasks/weak.yaml", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "warning: weak.yaml: the reference output is tiny in magnitude" in p.stderr
    assert "task check: 1 warning(s)" in p.stdout


def test_check_refuses_inputs_of_the_wrong_dtype(tmp_path):
    harness("task", "new", "wrongdtype", cwd=tmp_path)
    ref = tmp_path / "tasks" / "wrongdtype_ref.py"
    ref.write_text(ref.read_text().replace("return (x.to(dtype),)", "return (x.double(),)"))
    p = harness("task", "check", "tasks/wrongdtype.yaml", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.startswith("error: tasks/wrongdtype.yaml:13: key 'inputs': wrongdtype_ref.py:make_inputs "
                               "returned input 0 as torch.float64 for dtype float32"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
