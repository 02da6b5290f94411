"""The GPU timing lock (rungs/timing/gpu_lock.py): one process times a GPU at a time, across harness processes and
into the sandbox. On a CPU the lock file stands in for a GPU (the lock never looks at one)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from rungs.sandbox import bwrap
from rungs.timing import gpu_lock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRY = textwrap.dedent("""
    import sys, time
    from rungs.timing import gpu_lock
    fd = gpu_lock.inherited() if sys.argv[1] == "inherited" else gpu_lock.open_lock(sys.argv[1])
    with gpu_lock.held(fd, float(sys.argv[2])) as info:
        print("held" if not info["note"] else "not held", info["wait_s"], info["note"][:60], flush=True)
""")


def _key() -> str:
    return f"test-{uuid.uuid4().hex}"


def _other(key: str, wait_s: float, **kw) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT, **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-c", TRY, key, str(wait_s)], capture_output=True, text=True, timeout=60,
                          env=env, **kw).stdout.strip()


def test_a_second_process_waits_for_the_first_and_says_when_it_gave_up():
    key = _key()
    with gpu_lock.held_for(key) as mine:
        assert mine == {"wait_s": 0.0, "note": ""} or (mine["note"] == "" and mine["wait_s"] < 1)
        out = _other(key, 0.3)
    assert out.startswith("not held") and "another process held" in out, out
    assert float(out.split()[2]) >= 0.3
    assert _other(key, 0.3).startswith("held 0.0"), "released at the end of the block"


def test_no_key_no_lock():
    with gpu_lock.held_for(None) as info:
        assert info == {"wait_s": 0.0, "note": ""}


def test_the_lock_files_are_shared_by_users_and_named_safely():
    fd = gpu_lock.open_lock("GPU-ab/../cd")
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
        assert os.path.dirname(path) == str(gpu_lock.lock_dir()) and os.path.basename(path) == "GPU-ab_.._cd.lock"
        assert os.stat(path).st_mode & 0o666 == 0o666
    finally:
        os.close(fd)


@pytest.mark.skipif(bwrap.find_bwrap() is None or bwrap.unsandboxed(), reason="needs the bubblewrap sandbox")
def test_a_sandboxed_worker_takes_the_lock_through_its_inherited_descriptor():
    """The sandbox has its own /tmp, so the pool hands the worker the host's lock as an open, read-only descriptor
    (pool._spawn): held by the harness, the worker waits; the descriptor cannot write the file."""
    key = _key()
    fd = gpu_lock.open_lock(key, read_only=True)
    try:
        argv = bwrap.command([sys.executable, "-c", TRY + "\nimport os\ntry:\n    os.write(fd, b'x'); print('wrote')\n"
                              "except OSError:\n    print('read-only')\n", "inherited", "0.3"],
                             bwrap.Policy(readable=[__import__("pathlib").Path(ROOT)]))
        env = {**os.environ, "PYTHONPATH": ROOT, gpu_lock.FD_VAR: str(fd)}

        def sandboxed() -> list[str]:
            return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env,
                                  pass_fds=(fd,)).stdout.strip().splitlines()
        with gpu_lock.held_for(key):
            busy = sandboxed()
        free = sandboxed()
    finally:
        os.close(fd)
    assert busy[0].startswith("not held") and "another process held" in busy[0], busy
    assert free[0].startswith("held") and free[1] == "read-only", free


def test_a_worker_without_a_descriptor_times_without_the_lock(monkeypatch):
    monkeypatch.delenv(gpu_lock.FD_VAR, raising=False)
    assert gpu_lock.inherited() is None
    monkeypatch.setenv(gpu_lock.FD_VAR, "987")  # a number, but no open descriptor (the candidate closed it)
    assert gpu_lock.inherited() is None
