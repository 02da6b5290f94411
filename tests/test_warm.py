"""tests/warm.py, the forked `harness` commands most CLI tests run: what a command shows and how it ends are what a
fresh `python -m harness.cli` gives."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, TASKS
import warm
from warm import HARNESS


def both(*args: str, **kw) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"COLUMNS": "100"}
    return tuple(warm.run([*HARNESS, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                          warm=w, **kw) for w in (True, False))  # type: ignore[return-value]


def test_a_forked_command_shows_and_exits_as_a_fresh_one(tmp_path):
    assert warm.warm_for(HARNESS, None) and not warm.warm_for([sys.executable, "-c", "pass"], None)
    # a command whose startup environment differs gets a server started under it
    assert warm._key({**os.environ, "TRITON_INTERPRET": "7"}) != warm._key(None)
    for args in (["--help"], ["check", str(TASKS / "softmax.yaml"), str(tmp_path / "missing.py")],
                 ["check", str(TASKS / "softmax.yaml")], ["task", "new", "has space", "--dir", str(tmp_path)]):
        forked, fresh = both(*args)
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.returncode == 2 and fresh.stderr.startswith("error: ")


def test_a_forked_command_is_its_own_process_and_its_signal_death_is_its_status(tmp_path):
    pytest.importorskip("mcp")
    # `harness mcp TASK` serves on its stdin until it ends: a command that waits, to be killed
    proc = warm.Popen([*HARNESS, "mcp", str(TASKS / "softmax.yaml"), "--runs-dir", str(tmp_path)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert isinstance(proc, warm.Warm)
        time.sleep(0.5)
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        assert int(fields[1]) != os.getpid() and int(fields[3]) == proc.pid  # parent the server; its own session
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        proc.kill()
