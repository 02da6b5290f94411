"""rungs/ladder/forkserver.py: the trusted helpers (bench-shape reference, baselines) forked from a Python that has
imported torch are what `python -P -m MODULE` started cold is: exit status and output, descriptors at the numbers
asked for, their own session, no key in what /proc shows of them, and the server gone with the harness."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from rungs.ladder import forkserver

HELPER = [sys.executable, "-P", "-m", "rungs.ladder.bench_reference"]


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(e.split("=", 1) for e in f.read().decode().split("\0") if "=" in e)


def test_a_forked_helper_ends_and_writes_as_a_cold_one(tmp_path, monkeypatch):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = []
    for cold in ("0", "1"):
        monkeypatch.setenv("KERNEL_HARNESS_FORKSERVER", "0" if cold == "0" else "1")
        log = tmp_path / f"log{cold}"
        with open(log, "wb") as out:  # a job folder with no job: it says why and exits 1
            proc = forkserver.run([*HELPER, str(tmp_path / "nothing")], cwd=tmp_path, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=120)
        got.append((proc.returncode, log.read_text().strip().splitlines()[-1]))
    assert got[0] == got[1] and got[0][0] == 1, got


def test_a_forked_helper_has_its_descriptor_its_session_and_no_key_in_its_environ(tmp_path):
    read, write = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_API_KEY": "sk-not-for-proc"}
    with open(tmp_path / "log", "wb") as out:
        proc = forkserver.popen([*HELPER, "--serve", str(write)], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                                stdout=out, stderr=subprocess.STDOUT, pass_fds=(write,), start_new_session=True)
    os.close(write)
    try:
        assert isinstance(proc, forkserver.Helper)
        ours, deadline, theirs = os.readlink(f"/proc/self/fd/{read}"), time.monotonic() + 60, ""
        while time.monotonic() < deadline and theirs != ours:  # (until it has put its descriptors in place)
            try:
                theirs = os.readlink(f"/proc/{proc.pid}/fd/{write}")
            except OSError:
                pass
            time.sleep(0.05)
        assert theirs == ours
        assert os.getsid(proc.pid) == proc.pid and os.getsid(proc.pid) != os.getsid(0)
        shown = _environ(proc.pid)
        assert "FAKE_API_KEY" not in shown and "sk-not-for-proc" not in repr(shown)
        proc.stdin.close()  # a waiting server ends at the end of its stdin
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        os.close(read)


def test_the_server_ends_with_the_harness(tmp_path):
    code = f"""
import os, subprocess, sys
from rungs.ladder import forkserver
env = {{**os.environ, "PYTHONPATH": {str(ROOT)!r}}}
with open({str(tmp_path / "log")!r}, "wb") as out:
    forkserver.run([sys.executable, "-P", "-m", "rungs.ladder.bench_reference", "nothing"], cwd="/", env=env,
                   stdout=out, stderr=subprocess.STDOUT, timeout=120)
print(*[p.pid for p, _, _ in forkserver._servers.values()], flush=True)
os._exit(0)
"""
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    [server] = map(int, p.stdout.split())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{server}"):
        try:
            with open(f"/proc/{server}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.05)
    alive = os.path.exists(f"/proc/{server}") and open(f"/proc/{server}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    assert not alive, "the helper server outlived the harness"


def test_a_helper_starts_under_a_low_open_files_limit(tmp_path):
    """A soft limit of 64 descriptors (1024 is many systems' default): the helper puts its descriptors in place
    within it, and says what it says cold (a review found the first version asking for descriptor 1025)."""
    code = f"""
import os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from rungs.ladder import forkserver
env = {{**os.environ, "PYTHONPATH": {str(ROOT)!r}}}
with open({str(tmp_path / "log")!r}, "wb") as out:
    p = forkserver.run([sys.executable, "-P", "-m", "rungs.ladder.bench_reference", {str(tmp_path / "none")!r}],
                       cwd={str(tmp_path)!r}, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=120)
print(p.returncode, bool(forkserver._servers))
"""
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert p.stdout.split() == ["1", "True"], (p.stdout, p.stderr)
    assert "bench-reference-job.json" in (tmp_path / "log").read_text()  # the job folder's missing file, its words


def test_a_helper_is_signalled_through_its_pidfd_not_its_number(tmp_path, monkeypatch):
    """The server reaps a helper before the harness reads its status: a number the kernel may hand to another process
    in between. A helper's signals go through the pidfd the server sent with its pid (os.kill is never called); its
    process group's too (os.killpg, where the kernel has PIDFD_SIGNAL_PROCESS_GROUP: Linux 6.9); the pidfd does not
    reach the processes the harness starts."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    group_by_pidfd = True
    for how in ("kill", "killpg"):
        read, write = os.pipe()
        with open(tmp_path / "log", "wb") as out:
            proc = forkserver.popen([*HELPER, "--serve", str(write)], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                                    stdout=out, stderr=subprocess.STDOUT, pass_fds=(write,), start_new_session=True)
        os.close(write)
        os.close(read)
        assert isinstance(proc, forkserver.Helper) and proc._pidfd is not None
        assert not os.get_inheritable(proc._pidfd)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and os.getsid(proc.pid) != proc.pid:  # (until it leads its session)
            time.sleep(0.02)
        if how == "kill":
            with monkeypatch.context() as m:
                m.setattr(os, "kill", lambda *_: pytest.fail("signalled by number"))
                proc.kill()
                assert proc.wait(60) == -9
                proc.kill()  # after its end: nothing, no error
        else:
            try:
                signal.pidfd_send_signal(proc._pidfd, 0, None, forkserver.PIDFD_SIGNAL_PROCESS_GROUP)
            except OSError as e:
                group_by_pidfd = e.errno != errno.EINVAL  # an older kernel: killpg goes by number
            with monkeypatch.context() as m:
                if group_by_pidfd:
                    m.setattr(os, "killpg", lambda *_: pytest.fail("group signalled by number"))
                proc.killpg(signal.SIGKILL)
                assert proc.wait(60) == -9
