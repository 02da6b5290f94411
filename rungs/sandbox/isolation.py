"""Operating-system isolation for worker processes, used by rungs/sandbox/pool.py.

- The network is cut where the OS allows it: the worker starts in a new, empty network namespace
  (unshare(CLONE_NEWNET) as root, or inside a new user namespace otherwise). Whether that works is probed once per
  harness process; where it does not, the worker runs with the network and `network_note()` says so.
- Every process the worker starts is found and killed when the job ends, also one that left the worker's process
  group with setsid(): the worker is made a child subreaper (orphaned descendants stay its children while it
  lives), its descendants are found through /proc, and every process still carrying the job's environment marker
  is found by scanning /proc/<pid>/environ (that catches descendants orphaned after the worker died).
- A host-memory watchdog: the worker's process tree is killed once its resident memory passes a limit (the
  address-space limit works on a CPU only: CUDA reserves huge virtual ranges).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import math
import os
import secrets
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_CHILD_SUBREAPER = 36
MARKER_VAR = "KERNEL_HARNESS_JOB"
"""Environment variable holding a per-job random token: how the job's stray processes are recognised."""

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_netns: dict[str, str | None] = {}


def new_marker() -> str:
    return secrets.token_hex(8)


def _unshare_net(with_user: bool) -> None:
    """In the child between fork and exec: a new network namespace (holding only a loopback device, down)."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWNET | (CLONE_NEWUSER if with_user else 0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    if with_user:  # the same uid and gid inside, so files keep their owners
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def network_mode() -> str | None:
    """'netns' (root), 'userns' (unprivileged user namespace) or None: how this machine cuts a worker's network.
    Probed once, by starting an empty Python each way."""
    if "mode" not in _netns:
        _netns["mode"], _netns["why"] = None, "unshare(CLONE_NEWNET) is not available"
        if os.environ.get("KERNEL_HARNESS_NETWORK") == "1":
            _netns["why"] = "KERNEL_HARNESS_NETWORK=1 leaves it on"
            return None
        for mode, with_user in (("netns", False), ("userns", True)):
            try:
                subprocess.run([sys.executable, "-c", ""], preexec_fn=lambda w=with_user: _unshare_net(w), check=True, timeout=10,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (subprocess.SubprocessError, OSError) as exc:
                _netns["why"] = f"unshare failed: {exc}"[:200]
                continue
            _netns["mode"], _netns["why"] = mode, None
            break
    return _netns["mode"]


def network_note() -> str:
    mode = network_mode()
    if mode:
        return f"network cut (new network namespace{', in a user namespace' if mode == 'userns' else ''})"
    return f"network NOT cut: {_netns.get('why')}"


def child_setup(cut_network: str | None) -> None:
    """Runs in the child between fork and exec: subreaper, then (where probed to work) no network."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if cut_network:
        _unshare_net(cut_network == "userns")


# ---- finding and killing the job's processes --------------------------------------------------------------------
def _ppids() -> dict[int, int]:
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" or not _zombie(int(entry.name)):
            out[int(entry.name)] = int(fields[1])
    return out


def _children(pid: int) -> set[int] | None:
    """pid's children, from /proc/<pid>/task/<tid>/children (each thread's own); None where the kernel has no such
    file (CONFIG_PROC_CHILDREN) or it cannot be read."""
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out  # gone: no children
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.update(int(c) for c in f.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended between the listing and the read
            return None
        except OSError:
            return None
    return out


def descendants(pid: int) -> set[int]:
    """pid's descendants, walked down from pid through each process's children files: the memory watchdog asks four
    times a second for each waiting job, and a scan of every process's stat file cost 2% of a `harness check`'s own
    CPU (more on a machine running many processes); the scan where those files are missing. Zombies are left out,
    as the scan leaves them out (kill_job repeats while it finds any)."""
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        step: set[int] = set()
        for p in frontier:
            kids = _children(p)
            if kids is None:
                return _descendants_by_scan(pid)
            step |= kids
        frontier = step - found - {pid}
        found |= frontier
    return {p for p in found if not _zombie(p)}


def _zombie(pid: int) -> bool:
    """Ended and not yet reaped: state Z and no thread left. A main thread that exited while others run shows Z too,
    and that process lives on (its memory and its children with it): not a zombie here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] == "Z" and len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True  # gone


def _descendants_by_scan(pid: int) -> set[int]:
    parents = _ppids()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier and p not in found}
        found |= frontier
    return found


def marked(marker: str) -> set[int]:
    """Live processes whose environment holds MARKER_VAR=marker (skipping zombies and this process)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = set()
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle in Path(f"/proc/{entry.name}/environ").read_bytes() and not _zombie(int(entry.name)):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def kill_job(proc: subprocess.Popen[bytes], marker: str | None) -> None:
    """SIGKILL the worker's process group, its descendants and every process carrying the job's marker, again
    while any turn up (a forking process can race one pass); reap the worker."""
    for attempt in range(20):
        victims = descendants(proc.pid) if proc.poll() is None else set()
        if marker:
            victims |= marked(marker)
        victims.discard(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not victims:
            break
        time.sleep(0.005 * (attempt + 1))
    proc.wait()


# ---- waiting, with a memory watchdog ----------------------------------------------------------------------------
def rss_bytes(pids: set[int]) -> int:
    """Resident bytes of each process, from its status, else from a live thread's: a process whose main thread has
    exited while others run shows no VmRSS of its own (red team 2026-12-07: 300 MiB held that way went uncounted)."""
    total = 0
    for pid in pids:
        rss = _vm_rss(f"/proc/{pid}/status")
        if rss is None:  # its main thread gone (or the process): the threads' own files, only then listed
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            rss = next((r for r in (_vm_rss(f"/proc/{pid}/task/{t}/status") for t in tids) if r is not None), None)
        total += rss or 0
    return total


def _vm_rss(status: str) -> int | None:
    """VmRSS from a /proc status file, in bytes; None where it has none or cannot be read."""
    try:
        for line in Path(status).read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def disk_bytes(path: Path, max_entries: int = 100_000, max_depth: int = 32) -> int:
    """Bytes of disk under `path` (a file or a folder; links not followed), counted by allocated blocks, so a sparse
    or fallocate'd file counts for what it takes. Past `max_entries` entries or `max_depth` folders deep, counted as
    too many (walked without recursion: a folder chain thousands deep must not crash the harness)."""
    too_many = 1 << 62
    total = entries = 0
    stack = [(str(path), 0)]
    while stack:
        current, depth = stack.pop()
        try:
            st = os.lstat(current)
        except OSError:
            continue
        total += st.st_blocks * 512
        entries += 1
        if entries > max_entries:
            return too_many
        if not stat.S_ISDIR(st.st_mode):
            continue
        if depth >= max_depth:
            return too_many
        try:
            with os.scandir(current) as it:
                stack.extend((entry.path, depth + 1) for entry in it)
        except OSError:
            continue
    return total


def _waited(path: Path, cap: float) -> float:
    """The worker's figure in its wait file, read as a claim: a plain file only (never a link to /dev/zero or a
    FIFO that never answers), its first 4 KiB, a finite number, clipped to [0, cap]."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0.0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0.0
        value = json.loads(os.read(fd, 4096)).get("wait_s")
    except (OSError, ValueError, AttributeError, RecursionError):
        return 0.0
    finally:
        os.close(fd)
    return min(max(float(value), 0.0), cap) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0


def wait(proc: subprocess.Popen[bytes], timeout_s: float, rss_limit: int | None, poll_s: float = 0.25,
         disk: dict[Path, int] | None = None, until: Path | int | None = None,
         grace: tuple[Path, float] | None = None) -> tuple[int | None, str | None]:
    """Wait for the worker; returns (returncode, None), or (None, 'timeout' | 'memory' | 'disk:<path>') when it was
    stopped. `disk` maps host paths the job may write to their size limits. With `until`, returns (None, 'until')
    as soon as that file exists, or that descriptor is readable (waited on between polls, so seen at once).
    `grace` = (file, cap): the seconds the worker says it waited for the GPU (rungs/timing/gpu_lock.py;
    {"wait_s": x} in the file) lengthen the limit, by at most `cap`."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 and grace:  # read only past the base limit: not a file open every poll
            left += _waited(*grace)
        if left <= 0:
            return None, "timeout"
        if isinstance(until, int):
            if select.select([until], [], [], min(poll_s, left))[0]:
                return None, "until"
            if proc.poll() is not None:
                return proc.returncode, None
        else:
            try:
                return proc.wait(timeout=min(poll_s, left)), None
            except subprocess.TimeoutExpired:
                pass
            if until is not None and until.exists():
                return None, "until"
        if rss_limit and rss_bytes({proc.pid} | descendants(proc.pid)) > rss_limit:
            return None, "memory"
        for path, limit in (disk or {}).items():
            if disk_bytes(path) > limit:
                return None, f"disk:{path}"

