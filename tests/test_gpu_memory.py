"""A bench shape whose inputs and outputs cannot fit in the GPU's free memory is one line before any work
(rungs/ladder/gpu_memory.py), issue 36: never a CUDA out-of-memory error minutes into the climb."""
from __future__ import annotations

import pytest

from rungs.core.errors import BadInput
from rungs.core.spec import load_task
from rungs.ladder import gpu_memory
from rungs.ladder.ladder import Ladder

from conftest import TASKS

GIB = 1 << 30


def test_the_largest_bench_shape_against_free_memory():
    task = load_task(TASKS / "softmax.yaml")
    need = max(task.floor_terms(s)[1] for s in task.shapes.bench)
    assert gpu_memory.shortfall(task, "0", free=need) is None  # exactly enough: fits
    line = gpu_memory.shortfall(task, "0", free=need - 1)
    assert line is not None and "\n" not in line
    assert line.startswith("tasks/softmax.yaml:") and "key 'shapes.bench.0'" in line, line
    assert f"needs at least {need / GIB:.2f} GiB" in line and f"{(need - 1) / GIB:.2f} GiB free" in line


def test_a_gpu_climb_that_cannot_fit_stops_before_any_work(tmp_path, monkeypatch):
    """On this CPU machine the GPU climb is asked for all the same (device="cuda"): the check comes first, so it is
    the one line and not a failure of the missing GPU."""
    task = load_task(TASKS / "softmax.yaml")
    monkeypatch.setattr(gpu_memory, "free_bytes", lambda entry: 64 * (1 << 20))  # 64 MiB free
    with pytest.raises(BadInput, match=r"needs at least .* GiB of GPU memory .* has 0\.06 GiB free"):
        Ladder(task=task, kernel=TASKS / "demos" / "softmax_4_tuned.py", work_dir=tmp_path / "w",
               device="cuda").climb()
    assert not (tmp_path / "w").exists()  # nothing was started


def test_no_nvidia_smi_no_check(monkeypatch):
    monkeypatch.setattr(gpu_memory.shutil, "which", lambda name: None)
    assert gpu_memory.free_bytes("0") is None
    assert gpu_memory.shortfall(load_task(TASKS / "softmax.yaml"), "0") is None
