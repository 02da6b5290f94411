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
        assert info["wait_s"] == 0.0 and info["note"] == ""
        assert info["exclusive"]() == {"wait_s": 0.0, "note": ""}


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


def test_a_shared_hold_waits_for_a_timing_and_shares_with_another_shared_one():
    """Untimed GPU work (a run phase, the trusted bench-shape reference) holds the lock shared: many at once, none
    beside a timing, and a timing waits for them."""
    key = _key()
    with gpu_lock.held_for(key, shared=True) as one, gpu_lock.held_for(key, wait_s=0.3, shared=True) as two:
        assert one["note"] == "" and two["note"] == ""
        out = _other(key, 0.3)  # an exclusive hold (a timing) in another process
        assert out.startswith("not held"), out
    with gpu_lock.held_for(key):
        with gpu_lock.held_for(key, wait_s=0.3, shared=True) as beside:
            assert "ran beside its work" in str(beside["note"]) and "figures" not in str(beside["note"])


def test_a_workers_wait_for_the_gpu_lengthens_its_time_limit_up_to_a_cap(tmp_path):
    """The worker writes its waits to WAIT_FILE and the harness adds them to the job's limit (isolation.wait), at
    most the cap: the wait was another process's timing, not the candidate's time; a forged figure buys the cap."""
    from rungs.sandbox import isolation

    def run(waited: float, cap: float) -> str | None:
        (tmp_path / gpu_lock.WAIT_FILE).write_text(f'{{"wait_s": {waited}}}')
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
        try:
            return isolation.wait(proc, 1.0, None, poll_s=0.05, grace=(tmp_path / gpu_lock.WAIT_FILE, cap))[1]
        finally:
            proc.kill()
            proc.wait()
    assert run(2.0, 5.0) is None  # finished within 1 s + the 2 s it waited
    assert run(1e9, 0.2) == "timeout"  # a forged wait buys at most the cap
    wait_file = tmp_path / gpu_lock.WAIT_FILE
    wait_file.write_text("not json")
    assert isolation._waited(wait_file, 5.0) == 0.0
    # the file is the candidate's to shape: a link to an endless device or a FIFO is read as nothing, at once
    for make in (lambda: wait_file.symlink_to("/dev/zero"), lambda: os.mkfifo(wait_file)):
        wait_file.unlink()
        make()
        assert isolation._waited(wait_file, 5.0) == 0.0


def test_a_link_left_in_the_lock_folder_is_never_followed(tmp_path):
    """The harness may run as root and the lock folder is in the shared /tmp: a lock file that is a link (to
    /etc/passwd, say) must not be opened, created through, or made world-writable."""
    target = tmp_path / "precious"
    target.write_text("x")
    target.chmod(0o600)
    key = _key()
    link = gpu_lock.lock_dir() / f"{key}.lock"
    link.symlink_to(target)
    try:
        with pytest.raises(OSError):
            gpu_lock.open_lock(key)
        with gpu_lock.held_for(key) as info:  # a climb goes on, and says why it had no lock
            assert "could not be opened" in str(info["note"])
        assert target.stat().st_mode & 0o777 == 0o600 and target.read_text() == "x"
    finally:
        link.unlink()


def test_a_lock_folder_that_is_a_link_is_not_used(tmp_path, monkeypatch):
    """Someone made /tmp/kernel-harness-gpu-locks a link before the harness first ran: it is not used (nor chmodded
    through); the user's own folder is."""
    monkeypatch.setattr(gpu_lock.tempfile, "gettempdir", lambda: str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "kernel-harness-gpu-locks").symlink_to(elsewhere)
    folder = gpu_lock.lock_dir()
    assert folder == tmp_path / f"kernel-harness-gpu-locks-{os.geteuid()}"
    assert elsewhere.stat().st_mode & 0o7777 == 0o700


def test_each_worker_phase_holds_the_lock_it_needs_and_no_more(monkeypatch):
    """Timing holds the lock alone, untimed kernels share it, and an autotune phase with no space to tune (most
    kernels) waits for no one: a wait there showed as unexplained compile seconds on the H200."""
    from rungs.worker import autotune
    from rungs.worker.loop import lock_mode

    monkeypatch.setitem(autotune._state, "space", None)
    assert [lock_mode(p, True) for p in ("compile", "autotune", "run", "bench", "witness")] == [
        None, None, "shared", "exclusive", None]
    monkeypatch.setitem(autotune._state, "space", autotune.Space("CONFIGS", [{"B": 1}, {"B": 2}], ["B=1", "B=2"]))
    assert lock_mode("autotune", True) == "exclusive"
    assert {lock_mode(p, False) for p in ("autotune", "run", "bench")} == {None}


STARTING_TOOL = textwrap.dedent("""
    import pathlib, sys, time
    print("started", time.time(), flush=True)
    pathlib.Path(sys.argv[1]).touch()  # what a waiting worker does once Python, torch and its context are up
    line = sys.stdin.readline().strip()
    print("job", line, time.time(), flush=True)
""")


@pytest.mark.skipif(bwrap.find_bwrap() is None or bwrap.unsandboxed(), reason="needs the bubblewrap sandbox")
def test_a_trusted_tool_starts_beside_untimed_work_and_gets_its_job_only_with_the_gpu_alone(tmp_path):
    """ncu's witness and profile start a worker (Python, torch, a CUDA context: most of the 12-25 s they held the
    H200 alone a candidate). That start-up now holds the lock shared, beside other climbs' run phases, and the job
    line is written only once the lock is exclusive: here a run phase holds it shared for 1.5 s from before the
    tool starts; the tool is up while it runs, and gets its job after it lets go."""
    from rungs.sandbox import pool as sandbox_pool

    key = f"GPU-{_key()}"
    job = tmp_path / "job"
    job.mkdir()
    (job / "tool.py").write_text(STARTING_TOOL)
    ready = job / "ready"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from rungs.timing import gpu_lock
        with gpu_lock.held_for(sys.argv[1], shared=True):
            print("holding", flush=True)
            time.sleep(1.5)
            print("released", time.time(), flush=True)
    """), key], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert holder.stdout.readline().strip() == "holding"
    out = tmp_path / "tool.out"
    outcome = sandbox_pool.run_command([sys.executable, str(job / "tool.py"), str(ready)], job, 60, out,
                                       extra_env={"CUDA_VISIBLE_DEVICES": key}, stdin_text="JOB\n", ready=ready)
    released = float(holder.communicate(timeout=30)[0].split()[-1])
    lines = dict((line.split()[0], line.split()[1:]) for line in out.read_text().splitlines())
    assert outcome.returncode == 0, outcome.log_tail
    assert float(lines["started"][0]) < released  # it started beside the shared hold
    assert lines["job"][0] == "JOB" and float(lines["job"][1]) >= released  # its job came with the GPU alone
