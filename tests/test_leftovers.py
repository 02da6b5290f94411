"""Worker homes and eval folders that a killed harness left behind are removed by the next one that starts workers,
and nothing else is (rungs/sandbox/leftovers.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rungs.sandbox import leftovers


def _claimed_by_a_process_now_gone(folder: Path) -> None:
    folder.mkdir()
    code = "import sys; from pathlib import Path; from rungs.sandbox import leftovers; leftovers.claim(Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", code, str(folder)], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})


def test_only_the_folders_of_gone_makers_are_removed(tmp_path):
    dead_home, dead_eval = tmp_path / "harness-worker-dead0001", tmp_path / "harness-eval-dead0002"
    dead_check = tmp_path / "harness-check-dead0003"
    for folder in (dead_home, dead_eval, dead_check):
        _claimed_by_a_process_now_gone(folder)
        (folder / "job").mkdir()
        (folder / "job" / "inputs-c000.pt").write_bytes(b"x" * 1000)
    live = tmp_path / "harness-worker-live0001"
    live.mkdir()
    leftovers.claim(live)  # this process: alive
    unclaimed = tmp_path / "harness-worker-norec001"  # no record (an older harness, or one being made)
    unclaimed.mkdir()
    other_name = tmp_path / "not-harness-dead0003"
    _claimed_by_a_process_now_gone(other_name)
    other_ns = tmp_path / "harness-worker-othrns01"  # made in another PID namespace: its maker cannot be seen
    _claimed_by_a_process_now_gone(other_ns)
    record = json.loads((other_ns / leftovers.OWNER_FILE).read_text())
    (other_ns / leftovers.OWNER_FILE).write_text(json.dumps({**record, "pidns": "pid:[1]"}))
    other_boot = tmp_path / "harness-worker-oldboot1"  # another boot id: another machine sharing the folder, maybe
    other_boot.mkdir()
    leftovers.claim(other_boot)
    record = json.loads((other_boot / leftovers.OWNER_FILE).read_text())
    (other_boot / leftovers.OWNER_FILE).write_text(json.dumps({**record, "boot": "another-boot"}))
    no_start = tmp_path / "harness-worker-nostart1"  # a maker whose start this /proc could not tell: not judged
    _claimed_by_a_process_now_gone(no_start)
    record = json.loads((no_start / leftovers.OWNER_FILE).read_text())
    (no_start / leftovers.OWNER_FILE).write_text(json.dumps({**record, "start": None}))
    deep = dead_home / "job" / "chain"  # a candidate's job folder, shaped: too deep for a recursive removal
    deep.mkdir()
    back = os.getcwd()
    os.chdir(deep)
    try:
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(back)
    recycled = tmp_path / "harness-worker-recycle1"  # this process's pid, another start time: a recycled pid
    recycled.mkdir()
    leftovers.claim(recycled)
    record = json.loads((recycled / leftovers.OWNER_FILE).read_text())
    (recycled / leftovers.OWNER_FILE).write_text(json.dumps({**record, "start": "1"}))
    target = tmp_path / "target"
    target.mkdir()
    (target / leftovers.OWNER_FILE).write_text((dead_home / leftovers.OWNER_FILE).read_text())
    (tmp_path / "harness-worker-symlink1").symlink_to(target)  # a link is never followed

    removed = leftovers.sweep(tmp_path)
    assert sorted(p.name for p in removed) == sorted([dead_home.name, dead_eval.name, dead_check.name, recycled.name])
    assert not any(p.exists() for p in (dead_home, dead_eval, dead_check, recycled))
    for kept in (live, unclaimed, other_name, other_ns, other_boot, no_start, target):
        assert kept.is_dir(), kept
    assert (tmp_path / "harness-worker-symlink1").is_symlink()


def test_another_uids_folder_is_left_alone(tmp_path):
    if os.getuid() != 0:
        import pytest
        pytest.skip("needs root to give a folder to another uid")
    folder = tmp_path / "harness-worker-otheru01"
    _claimed_by_a_process_now_gone(folder)
    os.chown(folder, 65534, 65534)
    assert leftovers.sweep(tmp_path) == [] and folder.is_dir()


def test_a_scratch_folder_carries_its_record_and_goes_at_the_end():
    with leftovers.scratch("harness-check-") as folder:
        assert leftovers.NAMES.fullmatch(folder.name) and (folder / leftovers.OWNER_FILE).is_file()
        assert folder not in leftovers.sweep(folder.parent)  # its maker, this process, is alive
        assert folder.is_dir()
    assert not folder.exists()
