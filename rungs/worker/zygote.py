"""A CPU climb's phases in one sandbox: a pristine process that has imported torch forks a fresh child for each phase
job, and puts the sandbox back as it was between them (`python -m rungs.worker --zygote DEVICE MODULE READY ACK_FD`).

On a CPU a climb needs two workers: the compile phase builds for sm_90a, the run phase interprets, and Triton reads
TRITON_INTERPRET when it is imported. Each worker paid for `import torch` (about 1.6 CPU-s, most of a worker's start)
and one run of the suite started 393 of them (2026-12-07). Here torch is imported once, by this process, which never
imports the DSL or any code of the candidate's, and serves climb after climb (rungs/sandbox/pool.PhaseSession.release):
each phase is a fork of it that sets the interpreter's switch, imports the DSL and runs the job exactly as a freshly
started worker does (loop.main). The run phase's child is a copy of this process's memory, not of the compile
phase's: what the candidate did there is gone with that child's memory.

What one phase's child could leave for the next lives outside its memory, and is taken away before the next fork:
- its processes (a daemon, a `setsid` escapee, a chain of forks): kill(-1) ends every process of the sandbox but
  this one and bwrap's init at once, and the reset waits until they are gone;
- System V and POSIX message-queue IPC objects, which outlive their processes: the zygote's sandbox refuses those
  system calls (rungs/sandbox/bwrap.py, IPC_SYSCALLS);
- files: the sandbox's private /tmp and /dev/shm are emptied (a module planted there would be imported by the next
  child's own code before its guards: this process drops its working folder from sys.path too); the job folder is
  the harness's to empty and fill again (rungs/sandbox/pool.py);
- this process itself: it is not dumpable (no ptrace, no /proc/PID/mem from the sandbox's uid), ignores every signal
  it can (dropped at once: nothing left pending; SIGSTOP or SIGKILL end the climb's use of it, never change a run),
  and checks that all its limits, CPU set, scheduling policy and priority, nice value, I/O priority and pending
  signals (which a process of the same uid may change, and a child inherits) are as they were.
The reset says clean or why not on a pipe only this process holds (each child closes it first); the harness starts a
fresh worker for the next phase where it is not clean. docs/threat-model.md says what this leaves open.
"""
from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_DUMPABLE = 4
SCRATCH = ("/tmp", "/dev/shm")
"""What the sandbox lets its uid write besides the job folder (rungs/sandbox/bwrap.py: both private tmpfs)."""
KILL_WAIT_S = 5.0
IOPRIO_GET = {"x86_64": 252}
"""ioprio_get's syscall number (an I/O class another process of the uid may set, and a child inherits)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    if _libc().prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl")


def _state() -> tuple[object, ...]:
    """What another process of the sandbox's uid may change about this one (prlimit, sched_setaffinity,
    sched_setscheduler, setpriority, ioprio_set), all of which a child inherits: every limit, the CPU set, the
    scheduling policy and priority, the nice value and the I/O priority."""
    limits = tuple(resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource)) if n.startswith("RLIMIT_"))
    number = IOPRIO_GET.get(os.uname().machine)
    ioprio = _libc().syscall(number, 1, 0) if number else None  # IOPRIO_WHO_PROCESS, this process
    # signals sent to this process while it ignores them are dropped; one pending all the same would be a bit the
    # next phase could read in /proc/<this>/status (red team: blocked signals stayed pending, 30 bits)
    pending = tuple(line for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith(("SigPnd:", "ShdPnd:")))
    return (limits, tuple(sorted(os.sched_getaffinity(0))), os.sched_getscheduler(0),
            os.sched_getparam(0).sched_priority, os.getpriority(os.PRIO_PROCESS, 0), ioprio, pending)


def _ignore_signals() -> dict[int, object]:
    """Ignore every signal that can be (the real-time ones too), so one sent by a phase ends nothing here and, being
    dropped at once, leaves nothing pending to read; SIGCHLD keeps its default (ignored all the same, but a child
    still waits to be reaped). Returns the dispositions to give each child back."""
    before = {}
    for n in range(1, signal.NSIG):
        if n in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            continue
        try:
            before[n] = signal.signal(n, signal.SIG_IGN)
        except (OSError, ValueError):  # glibc's own (32, 33)
            pass
    return before


def in_own_sandbox() -> bool:
    """Whether this process is the first child of its PID namespace's init (bwrap's, whatever its binary is called:
    KERNEL_HARNESS_BWRAP may name any), so that kill(-1) reaches only the sandbox. On a host no process the harness
    started has pid 2 or 3 and init for its parent."""
    return os.getppid() == 1 and os.getpid() <= 3


def _others() -> list[int]:
    """The PID namespace's processes but init and this one, zombies left out (they hold nothing; init reaps them)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                if Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X"):
                    out.append(int(entry))
            except (OSError, IndexError):
                pass  # gone meanwhile
    return out


def _kill_the_rest() -> str | None:
    """SIGKILL every process of this PID namespace but init and this one, and wait until they are gone; None, or
    why not. kill(-1) walks the process list under the lock fork needs, and a fork with a fatal signal pending fails:
    no child made meanwhile escapes (a chain of processes each forking and exiting outran a kill per listed pid). It
    reaches only the sandbox's uid (bwrap's init is root's where the harness is root) and never this process."""
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:  # none to signal
            pass
        left = _others()
        if not left:
            return None
        time.sleep(0.005)
    return f"{len(left)} process(es) of the phase still alive after {KILL_WAIT_S:.0f} s"


def mount_points() -> frozenset[str]:
    """Where the sandbox mounted something (/proc/self/mountinfo's fifth field): in /tmp, the job folder and the
    folders shown read-only that live there (a task's folder, an import path); the sandbox cannot mount more."""
    points = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return frozenset(points)


def _empty(folder: str, mounts: frozenset[str]) -> str | None:
    """Remove everything in `folder` but its mounts and the folders on the way down to them (the job folder is the
    harness's to empty; the others are read-only); None, or what is left."""
    if not os.path.isdir(folder):
        return None
    for entry in os.scandir(folder):
        if entry.path in mounts:
            continue
        if any(m.startswith(entry.path + "/") for m in mounts):  # on the way to a mount: emptied around it
            if not entry.is_dir(follow_symlinks=False):
                return f"{entry.path} is not a folder"
            why = _empty(entry.path, mounts)
            if why:
                return why
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                # rm walks a chain of folders thousands deep without recursion, and makes an unwritable one (the
                # uid's own) writable again; it runs with this process's signals blocked, as it inherits them
                subprocess.run(["rm", "-rf", "--", entry.path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False, timeout=KILL_WAIT_S * 4)
            else:
                os.unlink(entry.path)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{entry.path} could not be removed ({type(exc).__name__})"
    left = [e.path for e in os.scandir(folder)
            if e.path not in mounts and not any(m.startswith(e.path + "/") for m in mounts)]
    return f"{left[0]} could not be removed" if left else None


def reset(before: tuple[object, ...], mounts: frozenset[str]) -> str | None:
    """Put the sandbox back as it was before the phase; None when it is, else why not (the harness then starts a
    fresh worker for the next phase)."""
    why = _kill_the_rest()
    for folder in SCRATCH:
        why = why or _empty(folder, mounts)
    if not why and _state() != before:
        why = "this process's limits, CPU affinity or priority were changed"
    return why


def _child(mode: str, job_dir: Path, ack_fd: int, worker_module: str, device: str,
           dispositions: dict[int, object]) -> None:
    """The phase's process: what a freshly started worker does (rungs/worker/__main__.py's --wait), after the fork."""
    try:
        os.close(ack_fd)  # first: no code of the candidate's may report for the parent
        for n, handler in dispositions.items():  # as a fresh Python has them (SIGINT raises KeyboardInterrupt)
            signal.signal(n, handler)  # type: ignore[arg-type]
        _prctl(PR_SET_DUMPABLE, 1)  # its own /proc files readable to itself, as in a fresh worker
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the harness's job lines are the zygote's to read
        os.close(null)
        if mode == "interpret":
            os.environ["TRITON_INTERPRET"] = "1"
        else:
            os.environ.pop("TRITON_INTERPRET", None)
        from rungs.backends import load_worker
        from rungs.worker.loop import main

        load_worker(worker_module, "").preload(device)
        os.chdir(os.environ.get("TMPDIR") or job_dir)
        main(job_dir)  # ends the process (os._exit)
    except BaseException:  # noqa: BLE001 - the phase files say what ran; a child never returns into the loop
        import traceback

        traceback.print_exc()
    os._exit(1)


def serve(device: str, worker_module: str, ready: str, ack_fd: int) -> None:
    """Take `MODE JOB_DIR` lines from stdin (MODE: compile or interpret), one forked child each; after each, reset
    the sandbox and write `EXIT_STATUS clean` or `EXIT_STATUS dirty: why` to `ack_fd`."""
    import torch  # noqa: F401 - what every phase needs, paid once

    if not in_own_sandbox():  # kill(-1) would reach the host's processes of this uid
        print("zygote: not in a sandbox of its own; refusing", file=sys.stderr, flush=True)
        os._exit(3)

    # `python -m` put the working folder (the sandbox's /tmp) first on sys.path: a phase could plant a module there
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
    _prctl(PR_SET_DUMPABLE, 0)
    dispositions = _ignore_signals()
    before, mounts = _state(), mount_points()
    Path(ready).touch()
    while line := sys.stdin.readline():
        mode, _, where = line.strip().partition(" ")
        job_dir = Path(where)
        pid = os.fork()
        if pid == 0:
            _child(mode, job_dir, ack_fd, worker_module, device, dispositions)
        _, status = os.waitpid(pid, 0)
        why = reset(before, mounts)
        os.write(ack_fd, f"{status} {'clean' if why is None else 'dirty: ' + why}\n".encode())
    os._exit(0)
