"""The harness's trusted helper processes forked from a Python that has imported torch, not each started cold.

A climb's trusted helpers (the bench-shape reference server, rungs/ladder/bench_reference.py; the eager and
torch.compile baselines, rungs/ladder/baseline.py) each started Python and imported torch before their first line of
work: 2.4-3.3 CPU-s on this project's 2-core CPU, paid again for every task a run or an eval judges, for every
one-off check, and about fifty times a run of the test suite. Here one process per harness process (per startup
environment) imports torch once and forks a helper per request; the helper is then what `python -P -m MODULE ARGS`
would be: its own argv, working folder, environment, standard streams and passed descriptors (at the numbers asked
for), its own session where asked, and its exit status (a signal's death included) comes back to the harness.

Trusted as the helpers it makes are, and never reachable from a sandbox: it is the harness's child, spoken to over a
socket pair whose other end only the harness holds (no address, so nothing can connect), it runs no code but this
module's and torch's import, and it never starts CUDA (a helper pinned to a GPU reads CUDA_VISIBLE_DEVICES when it
starts CUDA itself, after the fork). Its environment is the startup part of the harness's (what an interpreter or
torch reads as it starts); a helper whose startup environment differs gets a server of its own, and past
MAX_SERVERS it starts cold. A helper's /proc/<pid>/environ is then the server's, with no key in it. The server ends
when the harness does (its end of a pipe only the harness holds closes). KERNEL_HARNESS_FORKSERVER=0: every helper
starts cold, as before.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import IO, Any

ALLOWED = ("rungs.ladder.bench_reference", "rungs.ladder.baseline")
"""The modules a helper may be: the trusted helpers written for this (each ends through sys.exit or os._exit)."""
MAX_SERVERS = 2
PID_WAIT_S = 120.0
"""How long a request waits for its helper's pid (the first waits for the server's torch import)."""
STARTUP_PREFIXES = ("PYTHON", "PYTORCH", "LD_", "TORCH", "OMP_", "MKL_", "OPENBLAS", "KMP_", "GOMP_", "LC_", "LANG")
"""The environment an interpreter reads as it starts (its path, warnings, streams' encoding and buffering, locale) or
torch reads as it is imported (its thread pools' sizes, the JIT's switches): the server starts under the helper's.
CUDA's and Triton's are read later, by the helper itself."""


def _startup(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES)}


# ---------------------------------------------------------------------------------------------------- the server


def _serve(sock_fd: int, alive_fd: int) -> None:
    import select

    import torch  # noqa: F401 - what every helper imports first: paid once here

    server = os.getpid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # in the harness's process group: a terminal's Ctrl-C is the harness's
    requests = socket.socket(fileno=sock_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    waiting: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([requests, wake_r, alive_fd], [], [])
        if alive_fd in ready:
            _end(waiting)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if (reply := waiting.pop(pid, None)) is not None:
                with contextlib.suppress(OSError):
                    reply.sendall(f"status {status}\n".encode())
                reply.close()
        if requests in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(requests, 1 << 20, 64)
            except OSError:
                _end(waiting)
            if not msg:
                _end(waiting)  # the harness's end closed
            reply = socket.socket(fileno=fds.pop())
            request = json.loads(msg)
            if request.get("module") not in ALLOWED:  # only the helpers written for this, whoever asks
                reply.close()
                for fd in fds:
                    os.close(fd)
                continue
            pid = os.fork()
            if pid == 0:
                _helper(request, fds, server)  # never returns
            for fd in fds:
                os.close(fd)
            waiting[pid] = reply
            # with a pidfd (opened before this loop can reap the child, so it is that child's): the harness signals
            # through it, never by a number the kernel may have given to another process once this one is reaped
            pidfd = _pidfd(pid)
            with contextlib.suppress(OSError):
                socket.send_fds(reply, [f"pid {pid}\n".encode()], [pidfd] if pidfd is not None else [])
            if pidfd is not None:
                os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # Python or kernel without pidfds (Linux < 5.3): signals go by number
        return None


def _end(waiting: dict[int, socket.socket]) -> None:
    """The harness is gone: so are the helpers still running (each its process group where it made one)."""
    for pid in waiting:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
    os._exit(0)


def _helper(request: dict[str, Any], fds: list[int], server: int) -> None:
    """In the forked process: become `python -P -m MODULE ARGS` as asked, and exit as that would."""
    code, interrupted = 1, False
    try:
        import ctypes

        # dies with the server (which kills the running ones when the harness ends): never left running alone
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != server:
            os._exit(1)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN if sig == signal.SIGPIPE else signal.SIG_DFL)  # SIGPIPE: as Python's
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if request["new_session"]:
            os.setsid()
        import fcntl

        # the received descriptors above every number asked for, then each to its number; nothing else stays open
        targets: list[int] = request["targets"]
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, max(*targets, *fds) + 1) for fd in fds]  # above every number in play
        for fd, target in zip(high, targets):
            os.dup2(fd, target)  # inheritable, as pass_fds makes them
        keep = sorted(set(targets))
        start = 3
        for fd in keep + [1 << 16]:
            if fd >= start:
                os.closerange(start, fd)
                start = fd + 1
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _streams()
        # sys.path is the server's: `-P` (no working folder), started under the helper's PYTHONPATH (the key)
        sys.argv = ["-m", *request["args"]]
        import runpy

        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        except KeyboardInterrupt:
            import traceback

            traceback.print_exc()
            interrupted = True
        import atexit

        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - a helper never returns into the server's loop
        import traceback

        with contextlib.suppress(BaseException):
            traceback.print_exc()
        code = code or 1
    for s in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            s.flush()
    if interrupted:  # an uncaught Ctrl-C ends the process by the signal, as Python does
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _streams() -> None:
    """Standard streams on descriptors 0-2 as a fresh interpreter under the server's startup environment makes
    them for files and pipes: its encoding and error handlers (the server's own streams are /dev/null, made so), and
    unbuffered writes under `-u`/PYTHONUNBUFFERED (a helper killed past its limit keeps its log's last lines)."""
    import io

    def stream(fd: int, like: Any) -> IO[str]:
        write = like is not sys.stdin
        raw = io.FileIO(fd, "w" if write else "r", closefd=False)
        if not write:
            return io.TextIOWrapper(io.BufferedReader(raw), encoding=like.encoding, errors=like.errors)
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))  # the server started under the same
        return io.TextIOWrapper(raw if unbuffered else io.BufferedWriter(raw), encoding=like.encoding,  # type: ignore[arg-type]
                                errors=like.errors, line_buffering=like.line_buffering or os.isatty(fd),
                                write_through=bool(unbuffered))

    made = [stream(0, sys.stdin), stream(1, sys.stdout), stream(2, sys.stderr)]
    sys.stdin = sys.__stdin__ = made[0]
    sys.stdout = sys.__stdout__ = made[1]
    sys.stderr = sys.__stderr__ = made[2]


# ---------------------------------------------------------------------------------------------------- the harness

_lock = threading.Lock()
_servers: dict[frozenset[tuple[str, str]], tuple[subprocess.Popen[bytes], socket.socket, int]] = {}


def _server(key: frozenset[tuple[str, str]]) -> socket.socket | None:
    """The request socket of the server for this startup environment (started on first use); None: none may start."""
    with _lock:
        if key in _servers and _servers[key][0].poll() is None:
            return _servers[key][1]
        if key in _servers:  # it died: its place is free
            _, old, old_alive = _servers.pop(key)
            old.close()
            os.close(old_alive)
        if len(_servers) >= MAX_SERVERS:
            return None
        # (in the harness's process group, ignoring SIGINT: a helper without a session of its own gets a terminal's
        # Ctrl-C as a cold one did) messages, not a stream: each request is one message with its descriptors
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        alive_r, alive_w = os.pipe()  # the write end stays here, never inherited: its end of file is the harness's
        # no key, nothing of the harness's but where things are: a helper's /proc/<pid>/environ shows this
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")} | dict(key)
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-c",
                                     f"from rungs.ladder.forkserver import _serve; _serve({theirs.fileno()}, {alive_r})"],
                                    pass_fds=(theirs.fileno(), alive_r), env=env, cwd="/", stdin=subprocess.DEVNULL,
                                    # nothing of its own on the harness's streams (`--json`, the MCP transport):
                                    # each helper writes to the files it is given
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            theirs.close()
            os.close(alive_r)
        _servers[key] = (proc, ours, alive_w)
        return ours


PIDFD_SIGNAL_PROCESS_GROUP = 4
"""pidfd_send_signal's flag for the process group the pidfd's process leads (<linux/pidfd.h>, Linux 6.9)."""


class Helper:
    """A forked helper: what the harness uses of `subprocess.Popen` (pid, poll, wait, stdin, signals)."""

    def __init__(self, argv: list[str], pid: int, reply: socket.socket, reader: IO[str],
                 stdin: IO[bytes] | None, pidfd: int | None = None, early: str = "") -> None:
        self.args, self.pid, self.stdin, self.returncode = argv, pid, stdin, None
        self._reply = reader
        self._early = early  # what came after the pid line in its read: the start of the status line, if any
        self._sock = reply
        self._pidfd = pidfd  # None: the server could open none (an older kernel): signals by number, as Popen's
        self._done = threading.Event()
        threading.Thread(target=self._status, daemon=True).start()

    def _status(self) -> None:
        line = self._early
        if not line.endswith("\n"):
            try:
                line += self._reply.readline()
            except (OSError, ValueError):  # ValueError: bytes that do not decode; the helper is then killed below
                pass
        if line.startswith("status "):
            status = int(line.split()[1])
        else:  # the server went away: its helpers die with it (PR_SET_PDEATHSIG)
            with contextlib.suppress(OSError):
                self._signal(signal.SIGKILL)
            status = signal.SIGKILL
        self.returncode = os.waitstatus_to_exitcode(status)
        for end in (self._reply, self._sock):  # the reader holds the socket's descriptor open as long as it lives
            with contextlib.suppress(OSError):
                end.close()
        self._done.set()  # the pidfd stays open: killpg may still need it for what the helper left in its group

    def _signal(self, sig: int) -> None:
        # the pidfd is closed only when this object goes (__del__), so no signal meets a closed, reused number
        if self._pidfd is not None:
            signal.pidfd_send_signal(self._pidfd, sig)
        elif not self._done.is_set():
            os.kill(self.pid, sig)

    def killpg(self, sig: int) -> None:
        """`os.killpg(pid, sig)` for a helper that leads its own session, through its pidfd (the group the helper
        led, whatever number the kernel gives out meanwhile; Linux 6.9's PIDFD_SIGNAL_PROCESS_GROUP), by number on
        older kernels or without a pidfd."""
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, sig, None, PIDFD_SIGNAL_PROCESS_GROUP)
                return
            except OSError as e:
                if e.errno != errno.EINVAL:  # EINVAL: a kernel before 6.9; ESRCH: the group is empty, as os.killpg says
                    raise
        os.killpg(self.pid, sig)

    def __del__(self) -> None:
        pidfd, self._pidfd = getattr(self, "_pidfd", None), None
        if pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(pidfd)

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if not self._done.is_set():
            with contextlib.suppress(OSError):  # ProcessLookupError above all: it ended meanwhile
                self._signal(sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _module_of(argv: list[str]) -> tuple[str, list[str]] | None:
    """(module, its arguments) where argv is `python [-P] -m MODULE ARGS` for a module allowed here."""
    rest = argv[1:]
    if rest[:1] == ["-P"]:
        rest = rest[1:]
    if argv[:1] != [sys.executable] or rest[:1] != ["-m"] or len(rest) < 2 or rest[1] not in ALLOWED:
        return None
    return rest[1], rest[2:]


def popen(argv: list[str], *, cwd: str | os.PathLike[str], env: dict[str, str], stdout: Any, stderr: Any,
          stdin: Any = subprocess.DEVNULL, pass_fds: tuple[int, ...] = (),
          start_new_session: bool = False) -> "Helper | subprocess.Popen[bytes]":
    """`subprocess.Popen(argv, ...)` for a trusted helper (`python [-P] -m MODULE ARGS`, MODULE in ALLOWED), forked
    from the server for its startup environment; cold (a plain Popen) where that cannot be. stdin: DEVNULL or PIPE
    (a binary pipe, as Popen's); stdout, stderr: an open file, or STDOUT for stderr."""
    def cold() -> "subprocess.Popen[bytes]":
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                                pass_fds=pass_fds, start_new_session=start_new_session)

    parsed = _module_of(argv)
    sock = None
    if parsed is not None and os.environ.get("KERNEL_HARNESS_FORKSERVER", "1") != "0" and stdin in (
            subprocess.DEVNULL, subprocess.PIPE):
        sock = _server(frozenset(_startup(env).items()))
    if sock is None or parsed is None:
        return cold()
    module, args = parsed
    opened: list[int] = []
    write_end = None
    if stdin == subprocess.PIPE:
        read_end, write_end = os.pipe()
        opened.append(read_end)
        stdin_fd = read_end
    else:
        stdin_fd = os.open(os.devnull, os.O_RDONLY)
        opened.append(stdin_fd)
    out_fd = stdout.fileno() if hasattr(stdout, "fileno") else int(stdout)
    err_fd = out_fd if stderr == subprocess.STDOUT else (stderr.fileno() if hasattr(stderr, "fileno") else int(stderr))
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    request = {"module": module, "args": args, "cwd": os.fspath(cwd), "env": env, "new_session": start_new_session,
               "targets": [0, 1, 2, *pass_fds]}
    line, rest, pidfds = "", "", []
    try:
        with _lock:  # one request at a time on the shared socket: its messages must not interleave
            socket.send_fds(sock, [json.dumps(request).encode()], [stdin_fd, out_fd, err_fd, *pass_fds, theirs.fileno()])
        theirs.close()
        mine.settimeout(PID_WAIT_S)  # a server still importing torch answers within this; one that hangs does not
        # the pid line comes with the helper's pidfd (where the server could open one); a quick helper's status line
        # may follow in the same read, kept for the Helper
        msg, pidfds, _, _ = socket.recv_fds(mine, 4096, 1)
        for fd in pidfds:  # recv_fds leaves them inheritable: no process the harness starts gets one
            os.set_inheritable(fd, False)
        text = msg.decode()
        reader = mine.makefile("r")  # one reader for what follows: a second would lose what the first buffered
        if "\n" not in text and text:
            text += reader.readline()
        line, _, rest = text.partition("\n")
        line += "\n"
        mine.settimeout(None)
    except (OSError, TimeoutError, UnicodeDecodeError):
        pass
    except BaseException:
        mine.close()
        if write_end is not None:
            os.close(write_end)
        raise
    finally:
        theirs.close()
        for fd in opened:
            os.close(fd)
    if not line.startswith("pid "):  # the server died or hangs: it goes (its helpers with it), this one starts cold
        for fd in pidfds:
            os.close(fd)
        mine.close()
        if write_end is not None:
            os.close(write_end)
        _drop(sock)
        return cold()
    return Helper(argv, int(line.split()[1]), mine, reader,
                  os.fdopen(write_end, "wb") if write_end is not None else None, pidfds[0] if pidfds else None, rest)


def _drop(sock: socket.socket) -> None:
    """Kill the server behind `sock` and forget it (a later helper of its environment starts a new one)."""
    with _lock:
        for key, (proc, ours, alive_w) in list(_servers.items()):
            if ours is sock:
                proc.kill()
                proc.wait()
                ours.close()
                os.close(alive_w)
                del _servers[key]


def run(argv: list[str], *, timeout: float | None, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run(argv, ...)` through popen (no output captured: stdout and stderr go to the files given); on a
    timeout or any exception the helper is killed first, as subprocess.run kills its child."""
    proc = popen(argv, **kw)
    try:
        code = proc.wait(timeout)
    except BaseException:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        raise
    return subprocess.CompletedProcess(argv, code)
