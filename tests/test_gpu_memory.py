"""A bench shape whose inputs and outputs cannot fit in the GPU's free memory is one line before any work
(rungs/ladder/gpu_memory.py), issue 36: never a CUDA out-of-memory error minutes into the climb."""
from __future__ import annotations

import json
import threading
import time

import pytest

from rungs.core.errors import BadInput
from rungs.core.spec import load_task
from rungs.ladder import gpu_memory
from rungs.ladder.ladder import Ladder
from rungs.timing import gpu_lock

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


def _fake_gpu(monkeypatch, tmp_path, task_bytes: float) -> None:
    """The ledger in tmp_path and a task of `task_bytes` at its bench shape (it reserves three times that)."""
    monkeypatch.setattr(gpu_lock, "lock_dir", lambda: tmp_path)
    monkeypatch.setattr(gpu_memory, "bench_bytes", lambda task: (task_bytes, {}))


def _side_by_side(task, total: float) -> dict[str, gpu_memory.Admission]:
    """A first climb admitted and holding on, a second one asking beside it; the first lets go after 0.4 s."""
    seen: dict[str, gpu_memory.Admission] = {}
    first_in = threading.Event()

    def first() -> None:
        with gpu_memory.admitted(task, "0", total=total, poll_s=0.02) as a:
            seen["first"] = a
            first_in.set()
            time.sleep(0.4)
            seen["second before first left"] = seen.get("second")

    def second() -> None:
        with gpu_memory.admitted(task, "0", total=total, poll_s=0.02) as a:
            seen["second"] = a

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    first_in.wait(5)
    threads[1].start()
    for t in threads:
        t.join(10)
    return seen


def test_climbs_side_by_side_wait_for_the_gpu_memory_the_others_reserved(tmp_path, monkeypatch):
    """eval -j N and run --parallel put climbs side by side on one GPU; at KernelBench's real sizes four of them
    ran it out of memory (an honest kernel's OOM) or were refused as too large for its free memory. Each now reserves
    three times its bench bytes in a host-wide ledger and waits while the reservations beside it would pass 90% of
    the GPU: two 6 GiB climbs on a 10 GiB GPU take turns, on a 20 GiB one they run together."""
    task = load_task(TASKS / "softmax.yaml")
    _fake_gpu(monkeypatch, tmp_path, 2 * GIB)
    turns = _side_by_side(task, total=10 * GIB)
    assert turns["first"].others == 0 and turns["first"].reserved == 6 * GIB
    assert turns["second before first left"] is None  # it waited
    assert turns["second"].others == 0 and turns["second"].wait_s >= 0.3
    assert json.loads((tmp_path / "0.memory").read_text()) == {"held": {}, "waiting": []}  # both let go

    together = _side_by_side(task, total=20 * GIB)
    assert together["second before first left"] is not None
    assert together["second"].others == 6 * GIB and together["second"].wait_s < 0.3


def test_the_ledger_drops_dead_climbs_and_a_lone_climb_always_goes_in(tmp_path, monkeypatch):
    """A climb killed mid-way leaves its entry: it is dropped once its process is gone. A climb alone on the GPU goes
    in whatever it reserves (the free-memory check above is what refuses a task that cannot fit), and a small task
    takes no part in the ledger."""
    task = load_task(TASKS / "softmax.yaml")
    _fake_gpu(monkeypatch, tmp_path, 2 * GIB)
    mine = gpu_memory._me().split(":")
    gone = {"999999999:1:" + "0" * 12: 100 * GIB,  # no such process
            f"{mine[0]}:{int(mine[1]) + 1}:" + "1" * 12: 100 * GIB,  # this pid, another start: a pid reused
            "0:0:" + "2" * 12: 100 * GIB, "x:y": 100 * GIB}  # malformed
    waiting = list(gone)
    gone[gpu_memory._me()] = float("inf")  # a live climb's entry, but no size
    (tmp_path / "0.memory").write_text(json.dumps({"held": gone, "waiting": waiting}))
    with gpu_memory.admitted(task, "0", total=4 * GIB) as alone:  # 6 GiB asked of a 4 GiB GPU
        assert alone.others == 0 and alone.reserved == 6 * GIB and alone.wait_s < 1
        assert list(json.loads((tmp_path / "0.memory").read_text())["held"].values()) == [6 * GIB]
    _fake_gpu(monkeypatch, tmp_path, 0.1 * GIB)
    with gpu_memory.admitted(task, "1", total=4 * GIB) as small:
        assert small.reserved == 0 and not (tmp_path / "1.memory").exists()


def test_beside_other_climbs_the_free_memory_check_is_left_to_the_ledger(tmp_path, monkeypatch):
    """With other climbs holding reservations, the GPU's free memory is theirs in use, not what this task may have:
    a KernelBench problem of -j 4 that asked then was refused as too large for the GPU. Alone, it is checked."""
    task = load_task(TASKS / "softmax.yaml")
    _fake_gpu(monkeypatch, tmp_path, 2 * GIB)
    monkeypatch.setattr(gpu_memory, "free_bytes", lambda entry: 64 * (1 << 20))
    monkeypatch.setattr(gpu_memory, "total_bytes", lambda entry: 100 * GIB)
    monkeypatch.setattr(Ladder, "_climb", lambda self, admission: admission)  # the rungs are not this test's
    ladder = Ladder(task=task, kernel=TASKS / "demos" / "softmax_4_tuned.py", work_dir=tmp_path / "w", device="cuda")
    with pytest.raises(BadInput, match="GiB free"):  # alone: the free-memory check
        ladder.climb()
    beside = gpu_memory._me()  # another climb of this process (run --parallel climbs in threads)
    (tmp_path / "0.memory").write_text(json.dumps({"held": {beside: 30 * GIB}}))
    admission = ladder.climb()
    assert admission.others == 30 * GIB and admission.reserved == 6 * GIB
    assert json.loads((tmp_path / "0.memory").read_text()) == {"held": {beside: 30 * GIB}, "waiting": []}


def test_climbs_that_wait_go_in_the_order_they_came(tmp_path, monkeypatch):
    """A large problem waiting for room is not passed over for ever by smaller ones that would fit beside the
    climbs running: on a 20 GiB GPU with a 9 GiB climb in, a 12 GiB one waits, and a 6 GiB one that came after
    it waits behind it (though 9 + 6 fit), then both go in together once the first leaves (12 + 6 fit)."""
    from types import SimpleNamespace

    monkeypatch.setattr(gpu_lock, "lock_dir", lambda: tmp_path)
    monkeypatch.setattr(gpu_memory, "bench_bytes", lambda task: (task.size, {}))
    order: list[str] = []

    def climb(name: str, size: float, start: float, hold: float) -> None:
        time.sleep(start)
        with gpu_memory.admitted(SimpleNamespace(size=size * GIB / 3), "0", total=20 * GIB, poll_s=0.02):
            order.append(name)
            time.sleep(hold)

    threads = [threading.Thread(target=climb, args=a) for a in
               (("first 9", 9, 0.0, 0.6), ("large 12", 12, 0.15, 0.3), ("small 6", 6, 0.3, 0.1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order == ["first 9", "large 12", "small 6"]
