"""The trusted bench-shape reference processes, kept from one candidate's benchmark to the next.

Each passing candidate's bench-shape reference (rungs/ladder/bench_reference.py) ran in a process of its own: Python
and torch, the task's reference imported, a KernelBench Model built on the CPU and cast to float64 on the GPU, a CUDA
context, before any judging. On the H200 that was 5.6-16.8 s of every passing candidate (session 20, level 2's
12_Gemm_Multiply_LeakyReLU about 10 s), the largest part of its benchmark rung. A server here pays it once per task:
`python -m rungs.ladder.bench_reference --serve FD` reads a job folder per line on stdin, judges it as the one-job
process did (the same `main`, the GPU's lock taken shared per job), and answers on the pipe FD: its exit status and
whether it stays.

Trusted as the one-job process was: it runs only the task's own files and reads a candidate's outputs only through
rungs.ladder.outputs' contracts, so what one candidate's job leaves in it (cached models, the reference's imports) is
the harness's own. What it may keep is bounded: a job that fails, or that leaves more than KEEP_DEVICE_BYTES on the GPU
or KEEP_HOST_BYTES resident, retires its server (the next job starts a fresh one), and a server that does not answer
within the job's limit is killed. A server serves one task (its reference and input maker, by path and content) in one
environment (a climb pinned to another GPU gets its own); at most MAX_IDLE wait between jobs, the least recently used
closed first; a task whose climbs reserve more than KEEP_FOR_BYTES keeps none. A waiting server exits when the
harness's end closes its stdin; one judging a job is killed then.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rungs.ladder import forkserver

MAX_IDLE = 4
"""Servers kept waiting at most (each holds torch and the task's Model on the host, a CUDA context and at most 1 GiB
on the GPU: bench_reference.KEEP_DEVICE_BYTES): one per climb side by side (`--parallel 4`). Their 6 GB at most stay
within the tenth of the GPU the memory ledger leaves free (rungs/ladder/gpu_memory.BUDGET_FRACTION)."""
KEEP_FOR_BYTES = 8 << 30
"""A task whose climbs reserve more GPU memory than this (three times its bench tensors: 23_Softmax at upstream's
size, 38 GB) keeps no server: its candidates' workers need the memory more than its reference needs the start."""


@dataclass(eq=False)  # by identity: a set holds the busy ones
class _Server:
    proc: "subprocess.Popen[bytes] | forkserver.Helper"
    key: str
    answers: int
    """The read end of the pipe the server answers on."""
    jobs: int = 0

    def close(self, wait_s: float = 2.0) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # a waiting server exits at the end of its stdin
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.kill()
        with contextlib.suppress(OSError):
            os.close(self.answers)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            # its own session: anything it started goes too (a forked helper's group through its pidfd: the group it
            # led, not whatever now has its number)
            if isinstance(self.proc, forkserver.Helper):
                self.proc.killpg(signal.SIGKILL)
            else:
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


_idle: list[_Server] = []
"""Waiting servers, the most recently used last."""
_lock = threading.Lock()


def server_key(env: dict[str, str], *refs: str) -> str:
    """What a server is for: the environment it runs in and the task's files (`/path/file.py:function`), by content
    too (an edited reference is a new task)."""
    h = hashlib.sha256(repr(sorted(env.items())).encode())
    for ref in refs:
        h.update(ref.encode())
        file = Path(ref.rpartition(":")[0])
        h.update(file.read_bytes() if file.is_file() else b"")
    return h.hexdigest()


def _take(key: str) -> _Server | None:
    with _lock:
        for server in reversed(_idle):
            if server.key == key:
                _idle.remove(server)
                if server.proc.poll() is None:
                    return server
                server.close(0)
    return None


def _put_back(server: _Server) -> None:
    with _lock:
        _idle.append(server)
        old = _idle[:-MAX_IDLE] if len(_idle) > MAX_IDLE else []
        del _idle[:len(old)]
    for s in old:
        s.close()


def _start(env: dict[str, str], key: str, job_dir: Path, log: Path) -> _Server:
    read, write = os.pipe()
    try:  # its own session: a Ctrl-C of the harness is the harness's to act on (judge kills a server in a job)
        with open(log, "wb") as out:  # what it prints before it reads its first job (an import that fails)
            # -P: the job folder it starts in (a candidate's worker wrote there) is not on its import path
            proc = forkserver.popen([sys.executable, "-P", "-m", "rungs.ladder.bench_reference", "--serve", str(write)],
                                    cwd=job_dir, env=env, stdin=subprocess.PIPE, stdout=out,
                                    stderr=subprocess.STDOUT, pass_fds=(write,), start_new_session=True)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return _Server(proc, key, read)


def _answer(server: _Server, deadline: float) -> str | None:
    """The server's answer line, or None where it ended without one; raises TimeoutExpired past the deadline."""
    data = b""
    with selectors.DefaultSelector() as waiting:  # not select(): a descriptor past 1024 is fine
        waiting.register(server.answers, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired("bench reference", 0)
            if waiting.select(left):
                chunk = os.read(server.answers, 256)
                if not chunk:
                    return None
                data += chunk
    return data.decode(errors="replace").strip()


def _send(server: _Server, job_dir: Path) -> bool:
    try:
        assert server.proc.stdin is not None
        server.proc.stdin.write(f"{job_dir.resolve()}\n".encode())
        server.proc.stdin.flush()
        return True
    except OSError:  # it ended between jobs
        return False


def reserve(env: dict[str, str], key: str, folder: Path) -> _Server:
    """A server for `key` reserved for one climb now, ahead of its job: one waiting idle, else one started now (its
    imports then overlap the candidate's worker; climbs side by side each get their own). The caller owns it: it
    hands it to judge(reserved=) or, when the climb ends before its bench-shape reference, to release(). What a new
    one prints before its first job goes to `folder`/bench-reference-start.log (the harness's folder, never a
    job's)."""
    return _take(key) or _start(env, key, folder, folder / "bench-reference-start.log")


def release(server: _Server) -> None:
    """A reserved server its climb did not use: waiting for the next climb of its task, or closed where it ended."""
    if server.proc.poll() is None:
        _put_back(server)
    else:
        server.close()


_busy: set[_Server] = set()
"""Servers judging a job now: killed at the harness's end, never left running after it."""


def judge(job_dir: Path, env: dict[str, str], key: str, timeout_s: float, keep: bool = True,
          reserved: _Server | None = None) -> tuple[int, int]:
    """Judge the job written in `job_dir` (bench-reference-job.json) in a waiting server for `key`, else a new one:
    (its status, how many jobs that server had judged before). The server writes bench-reference.json and .log in
    the job folder, as the one-job process did; it waits for the next job only with `keep` (more candidates of the
    task are coming: a run's loop, not a one-off check). Raises subprocess.TimeoutExpired past `timeout_s`; on that
    or any other exception here (a Ctrl-C) the server is killed. A kept server that ends without answering (killed
    between jobs) is the harness's loss, not the candidate's: the job goes to a new one. `reserved`: the server
    reserve() held for this job's climb, used first (judge owns it from here)."""
    log = job_dir / "bench-reference.log"
    deadline = time.monotonic() + timeout_s
    if reserved is not None and (reserved.key != key or reserved.proc.poll() is not None):
        reserved.close(0)  # ended while it waited (or another task's): the usual ways instead
        reserved = None
    server = reserved or _take(key)
    while True:
        log.unlink(missing_ok=True)  # the parent's file: nothing a worker left under that name is appended to
        (job_dir / "bench-reference.json").unlink(missing_ok=True)  # nor a verdict file a worker left there
        started_here = False  # a server started for this job: its death in the job is the job's answer
        if server is None or not _send(server, job_dir):
            if server is not None:
                server.close(0)
            server, started_here = _start(env, key, job_dir, log), True
            if not _send(server, job_dir):
                server.kill()
                return 1, 0
        before = server.jobs
        with _lock:
            _busy.add(server)
        try:
            answer = _answer(server, deadline)
        except BaseException:
            server.kill()
            server.close(0)
            raise
        finally:
            with _lock:
                _busy.discard(server)
        server.jobs += 1
        status, _, stays = (answer or "").partition(" ")
        if answer is not None and status.lstrip("-").isdigit():
            break
        server.close(0)  # it died in the job (a signal, the OOM killer)
        if started_here:
            return (server.proc.returncode if server.proc.returncode is not None else 1), before
        server = None  # one that waited (kept or reserved; maybe killed while idle): the job again, in a new one
    if keep and stays == "stays" and server.proc.poll() is None:
        _put_back(server)
    else:
        server.close()
    return int(status), before


@atexit.register
def close_all() -> int:
    """Close every waiting server (at the harness's end, and for a climb short of GPU memory): how many there were.
    Those judging a job at the end are killed by _kill_busy."""
    with _lock:
        servers = list(_idle)
        _idle.clear()
    for server in servers:
        server.close()
    return len(servers)


@atexit.register
def _kill_busy() -> None:
    with _lock:
        busy = list(_busy)
    for server in busy:
        server.kill()
