"""`python -m harness.cli ...` for the tests, forked from an interpreter that has already imported torch.

The suite runs `harness` as a user would, a process per command: about two hundred of them a run, and each paid
2.5-3 CPU-s to import torch, triton and numpy before doing anything (on CI's 2 cores, a third of the suite's time).
Here a test process starts one server that imports those (nothing of the harness: its modules are imported by each
command, with the command's own environment) and forks it for each command. The command's process is then what
`python -m harness.cli` would be: its own pid, argv, working folder, environment, stdin/stdout/stderr, exit status
(a signal's death included), session when asked for; its parent is the server, not the test.

What it is not, and where the tests keep a real interpreter (`run(..., warm=False)`, or an argument list that is not
`[sys.executable, "-m", "harness.cli", ...]`): an interpreter's start with the command's own startup environment. An
environment that changes what a start would import or how (PYTHON*, LD_*, TORCH_*, TRITON_*, the BLAS and OpenMP
threads, CUDA_*) runs a real interpreter, as do the terminal tests (pexpect) and the README's commands.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-m", "harness.cli"]
# what the server imports before it forks: what every command imports, and costs most (torch alone 2.4-3.3 CPU-s here)
PRELOAD = ("torch", "numpy", "triton", "triton.language", "pydantic", "typer", "click", "rich.console", "jinja2",
           "yaml")
# the environment read as an interpreter starts or as those modules load: a command that differs here runs cold
STARTUP_PREFIXES = ("PYTHON", "LD_", "TORCH", "TRITON", "CUDA", "OMP_", "MKL_", "OPENBLAS", "KMP_", "NVIDIA", "PYTORCH")
# read only as a process runs, so a forked command sees its own (PYTHONUNBUFFERED: its stdio is made here)
# (PYTHONPATH: its folders are put on the forked command's path, as a start would)
RUNTIME_PYTHON = {"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "PYTHONPATH"}


def _startup_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_PREFIXES) and k not in RUNTIME_PYTHON}


# ---------------------------------------------------------------------------------------------------- the server


def _serve(listen_fd: int, alive_fd: int) -> None:
    """The server's loop: a command per connection, forked at once; its wait status written back when it ends.
    It ends when the test process does (`alive_fd` reads end of file: the only writer was the test process).
    rungs/ladder/forkserver.py's _serve has the same child-reaping loop; it is not imported from there because this
    server must import nothing of the harness (a forked command would inherit that copy of `rungs`, not the one its
    own environment's path names)."""
    for name in PRELOAD:
        __import__(name)
    listener = socket.socket(fileno=listen_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    waiting: dict[int, socket.socket] = {}
    import select
    while True:
        ready, _, _ = select.select([listener, wake_r, alive_fd], [], [])
        if alive_fd in ready:  # the test process is gone: its socket's folder with it (mkdtemp's, in _address)
            path = listener.getsockname()
            if isinstance(path, str) and os.path.basename(os.path.dirname(path)).startswith("harness-warm-"):
                shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            os._exit(0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"status {status}\n".encode())
                except OSError:
                    pass
                conn.close()
        if listener in ready:
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                request = json.loads(msg)
            except (OSError, ValueError):
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                _command(request, fds)  # never returns
            for fd in fds:
                os.close(fd)
            waiting[pid] = conn
            conn.sendall(f"pid {pid}\n".encode())


def _command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked process: become `python -m harness.cli ARGS` in the request's folder and environment, and exit."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if request.get("new_session"):
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    if request.get("terminal"):  # a pseudo-terminal's side: it becomes the new session's controlling terminal
        import fcntl
        import termios
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.closerange(3, 1 << 16)  # what subprocess's close_fds does: the server's socket and pipes are not the command's
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    import tempfile
    tempfile.tempdir = None  # found again from the command's own TMPDIR, as a fresh interpreter would
    import io
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))

    def stream(fd: int, mode: str, errors: str, line: bool) -> IO[str]:
        raw = io.FileIO(fd, mode, closefd=False)
        if mode == "r":
            return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors=errors)
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors,
                                line_buffering=line or os.isatty(fd), write_through=unbuffered)

    sys.stdin = sys.__stdin__ = stream(0, "r", "strict", False)
    sys.stdout = sys.__stdout__ = stream(1, "w", "strict", False)
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace", True)
    sys.path[0] = os.getcwd()  # what `-m` puts first, then PYTHONPATH's folders
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in extra if p not in sys.path]
    sys.argv = ["-m", *request["args"]]
    code: int = 0
    import runpy
    import traceback
    try:
        runpy.run_module("harness.cli", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    # what an interpreter's exit does before its teardown
    import atexit
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except (OSError, ValueError):
            code = code or 120
    if code < 0:  # an uncaught Ctrl-C ends the process by the signal, as Python does
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


# ---------------------------------------------------------------------------------------------------- the client

_lock = threading.Lock()
MAX_SERVERS = 3
"""Servers at most, one per startup environment the commands ask for (the tests' own, with TRITON_INTERPRET set or
not: test modules set it at import and the harness's export drops it from the test process's environment); a
command in a fourth runs a real interpreter."""
_servers: dict[frozenset[tuple[str, str]], tuple[subprocess.Popen, str, int]] = {}


def _key(env: dict[str, str] | None) -> frozenset[tuple[str, str]]:
    return frozenset(_startup_env(dict(env if env is not None else os.environ)).items())


def _address(env: dict[str, str] | None) -> str:
    """The socket of the server for this command's startup environment (the server started on first use)."""
    key = _key(env)
    with _lock:
        if key in _servers and _servers[key][0].poll() is None:
            return _servers[key][1]
        folder = tempfile.mkdtemp(prefix="harness-warm-")
        path = os.path.join(folder, "sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        alive_r, alive_w = os.pipe()  # the write end stays here, never inherited: its end of file is ours
        code = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); import warm; "
                f"warm._serve({listener.fileno()}, {alive_r})")
        # a forked command's /proc/<pid>/environ is the server's: no keys in it (the commands get theirs in `env`);
        # what it imports under is the command's startup environment
        base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN", "_SECRET"))}
        server_env = {k: v for k, v in base.items() if k not in _startup_env(base)} | dict(key)
        proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=[listener.fileno(), alive_r], cwd=ROOT,
                                stdin=subprocess.DEVNULL, env=server_env)
        listener.close()
        os.close(alive_r)
        _servers[key] = (proc, path, alive_w)
        return path


def warm_for(args: list[str], env: dict[str, str] | None) -> bool:
    """Whether this command can be forked: `python -m harness.cli ...` with a server for its startup environment
    running, or room for one."""
    if list(args[:3]) != HARNESS or os.environ.get("HARNESS_TESTS_COLD"):
        return False
    return _key(env) in _servers or len(_servers) < MAX_SERVERS


class Warm:
    """A forked command, as much of `subprocess.Popen` as the tests use: pid, poll, wait, signals, pipes."""

    def __init__(self, args: list[str], cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
                 stdin: int | IO | None = None, stdout: int | IO | None = None, stderr: int | IO | None = None,
                 text: bool = False, start_new_session: bool = False, terminal: bool = False) -> None:
        path = _address(env)
        self.args, self.returncode = args, None
        mine: list[int] = []  # the ends handed over, closed here once sent
        mine_r: dict[str, int] = {}

        def end(spec: int | IO | None, fd: int, name: str, reading: bool) -> int:
            if spec is None:
                return fd
            if spec == subprocess.DEVNULL:
                n = os.open(os.devnull, os.O_RDWR)
                mine.append(n)
                return n
            if spec == subprocess.PIPE:
                r, w = os.pipe()
                ours, theirs = (w, r) if reading else (r, w)
                mine.append(theirs)
                mine_r[name] = ours
                return theirs
            if spec == subprocess.STDOUT:
                return -1
            return spec if isinstance(spec, int) else spec.fileno()

        fds = [end(stdin, 0, "stdin", True), end(stdout, 1, "stdout", False), end(stderr, 2, "stderr", False)]
        if fds[2] == -1:
            fds[2] = fds[1]
        request = {"args": list(args[3:]), "cwd": os.fspath(cwd or os.getcwd()),
                   "env": dict(env if env is not None else os.environ), "new_session": start_new_session or terminal,
                   "terminal": terminal}
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.connect(path)
        socket.send_fds(self._conn, [json.dumps(request).encode()], fds)
        for fd in mine:
            os.close(fd)
        self._reader = self._conn.makefile("r")
        line = self._reader.readline()
        assert line.startswith("pid "), f"the warm server did not start the command: {line!r}"
        self.pid = int(line.split()[1])
        wrap = (lambda fd, mode: open(fd, mode, encoding="utf-8")) if text else (lambda fd, mode: open(fd, mode + "b"))
        self.stdin = wrap(mine_r["stdin"], "w") if "stdin" in mine_r else None
        self.stdout = wrap(mine_r["stdout"], "r") if "stdout" in mine_r else None
        self.stderr = wrap(mine_r["stderr"], "r") if "stderr" in mine_r else None
        self._done = threading.Event()
        threading.Thread(target=self._status, daemon=True).start()

    def _status(self) -> None:
        line = self._reader.readline()
        if line.startswith("status "):
            self.status = int(line.split()[1])
        else:  # the server went away: the command is gone with it, or will be told nothing
            self.status = signal.SIGKILL
        self.returncode = os.waitstatus_to_exitcode(self.status)
        self._conn.close()
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        if not self._done.is_set():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: str | bytes | None = None, timeout: float | None = None) -> tuple[Any, Any]:
        out: dict[str, Any] = {}

        def drain(name: str) -> None:
            f = getattr(self, name)
            out[name] = f.read()
            f.close()

        readers = [threading.Thread(target=drain, args=(n,), daemon=True) for n in ("stdout", "stderr")
                   if getattr(self, n) is not None]
        for t in readers:
            t.start()
        if self.stdin is not None:
            try:
                if input:
                    self.stdin.write(input)
                self.stdin.close()
            except BrokenPipeError:
                pass
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in readers:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return out.get("stdout"), out.get("stderr")

    def __enter__(self) -> "Warm":
        return self

    def __exit__(self, *exc: object) -> None:
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                f.close()
        self.wait()


def Popen(args: list[str], **kw: Any) -> "Warm | subprocess.Popen":
    """`subprocess.Popen`, forked from the warm server where the command allows it (`warm_for`)."""
    if kw.pop("warm", True) and warm_for(args, kw.get("env")) and set(kw) <= {
            "cwd", "env", "stdin", "stdout", "stderr", "text", "start_new_session"}:
        return Warm(args, **kw)
    return subprocess.Popen(args, **kw)


def run(args: list[str], *, input: str | bytes | None = None, capture_output: bool = False,
        timeout: float | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """`subprocess.run`, forked from the warm server where the command allows it (`warm_for`)."""
    if capture_output:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    proc = Popen(args, **kw)
    with proc:  # both close their pipes and wait at the end
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def spawn(command: str, args: list[str], **kw: Any) -> Any:
    """`pexpect.spawn(sys.executable, ["-m", "harness.cli", ...], ...)`, forked from the warm server where the
    command allows it: in a pseudo-terminal of its own that is its session's controlling terminal, as pexpect's."""
    import pexpect
    import ptyprocess

    if not warm_for([command, *args], kw.get("env")):
        return pexpect.spawn(command, args, **kw)

    class Pty(ptyprocess.PtyProcess):
        """ptyprocess's view of a forked command: its status comes from the server, the test is not its parent."""

        def __init__(self, proc: Warm, fd: int) -> None:
            super().__init__(proc.pid, fd)
            self.proc = proc

        def _ended(self) -> None:
            self.status, self.terminated = self.proc.status, True
            self.exitstatus = os.WEXITSTATUS(self.status) if os.WIFEXITED(self.status) else None
            self.signalstatus = os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None

        def isalive(self) -> bool:
            if self.proc.poll() is None:
                return True
            self._ended()
            return False

        def wait(self) -> int | None:
            self.proc.wait()
            self._ended()
            return self.exitstatus

    class Spawn(pexpect.spawn):
        def _spawnpty(self, argv: list[Any], env: dict[str, str] | None = None, cwd: str | None = None,
                      dimensions: tuple[int, int] = (24, 80), **_: Any) -> Pty:
            import fcntl
            import pty
            import struct
            import termios

            argv = [a.decode() if isinstance(a, bytes) else a for a in argv]
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", dimensions[0], dimensions[1], 0, 0))
            try:
                proc = Warm(argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, terminal=True)
            finally:
                os.close(slave)
            return Pty(proc, master)

    return Spawn(command, args, **kw)
