"""Folders a harness process left in the temporary folder when it could not clean up (SIGKILL, a crash, the OOM
killer): each sandboxed worker's home (`harness-worker-*`, with the job's input files: its test cases, a problem
model's weights), `harness eval`'s pool folders (`harness-eval-*`, holding homes), `harness check`'s work folder
(`harness-check-*`: the job's folder and the dumps) and a Ray host's climb folder (`harness-climb-*`). The next
harness process that starts workers there removes the ones whose maker is gone.

Each such folder gets an owner record when it is made (`claim`): the maker's pid and start time as /proc shows them
(so a recycled pid is not taken for it), its PID namespace and the boot. A folder is removed only when all of these
hold: its name is one of the harness's, it is a real folder (not a link) owned by this uid, and its record names this
boot and PID namespace and a process that is gone (or a process of that pid started at another time). Anything else is
left alone: a folder without a record or with one this process cannot judge, of another uid, from another PID
namespace (a container beside this one sharing /tmp, whose processes cannot be seen from here) or another boot id (a
temporary folder shared between machines: their boot ids differ, and their processes cannot be seen either). The
record is written outside the job folder, the only part of a home a worker can write, so a candidate cannot name
another process as its maker. A candidate may shape its job folder (a chain of folders thousands deep, folders it
made unreadable): the removal is `rm -rf`, the record goes last, and a folder not wholly removed keeps its record
for the next sweep. The sweep never raises: cleanup must not fail a climb.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterator

OWNER_FILE = "owner.json"
NAMES = re.compile(r"harness-(worker|eval|check|climb)-[a-z0-9_]{8}")
"""mkdtemp's names for worker homes (rungs/sandbox/pool._spawn), eval pool folders (harness/eval._pool_round),
`harness check`'s work folders and a Ray host's climb folders (`scratch`)."""


def remove_tree(path: Path) -> None:
    """Delete a folder a candidate may have shaped (a chain of folders thousands deep would overflow Python's
    recursion in shutil.rmtree): rm walks it without recursion."""
    subprocess.run(["rm", "-rf", "--", str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)


def _start_time(pid: str) -> str | None:
    """The process's start time in clock ticks after boot (/proc/PID/stat's 22nd field), or None when it is gone or
    unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2:].split()  # after the command name: any bytes, spaces or parentheses
        return fields[19].decode() if len(fields) > 19 else None
    except (OSError, ValueError):
        return None


def _here() -> dict[str, str]:
    def read(path: str, link: bool = False) -> str:
        try:
            return os.readlink(path) if link else Path(path).read_text().strip()
        except (OSError, ValueError):
            return ""
    return {"pidns": read("/proc/self/ns/pid", link=True), "boot": read("/proc/sys/kernel/random/boot_id")}


def claim(folder: Path) -> None:
    """Record this process as the maker of `folder` (just made by mkdtemp). The pid is the one this /proc shows
    (/proc/self), which getpid() is not in a PID namespace that kept its parent's /proc."""
    try:
        pid = os.readlink("/proc/self")
    except OSError:
        pid = ""
    (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "start": _start_time(pid) if pid else None,
                                                 **_here()}))


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder that a later sweep removes if this process is killed before it can (`prefix`: one that
    NAMES knows), removed by rm at the end as a tree a candidate may have shaped."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        claim(folder)
        yield folder
    finally:
        remove_tree(folder)


def _stale(folder: Path, here: dict[str, str]) -> bool:
    try:
        record = json.loads((folder / OWNER_FILE).read_text())
        pid, start, pidns, boot = str(int(record["pid"])), record["start"], record["pidns"], record["boot"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False  # no record (an older harness's, or one being made), or one that cannot be read: not judged
    if not (isinstance(start, str) and start and here["boot"] and here["pidns"]):
        return False
    if (boot, pidns) != (here["boot"], here["pidns"]):
        return False
    return _start_time(pid) != start


def _remove(folder: Path) -> bool:
    """Everything in `folder` but its record, then the record and the folder; whether it is gone."""
    for entry in os.scandir(folder):
        if entry.name != OWNER_FILE:
            remove_tree(Path(entry.path))
    if any(e.name != OWNER_FILE for e in os.scandir(folder)):
        return False  # kept with its record: the next sweep tries again
    (folder / OWNER_FILE).unlink(missing_ok=True)
    folder.rmdir()
    return True


_swept = False
"""Whether this process has started its sweep (sweep_once)."""


def sweep_once() -> None:
    """The temporary folder's sweep, once a process, in a thread beside the process's work (a stale home may hold
    much to delete). Called where a process starts its first worker."""
    global _swept
    if not _swept:
        _swept = True
        threading.Thread(target=sweep, args=(Path(tempfile.gettempdir()),), daemon=True, name="leftovers").start()


def sweep(parent: Path) -> list[Path]:
    """Remove the stale folders directly in `parent`; the ones removed. Never raises."""
    removed: list[Path] = []
    try:
        here, uid = _here(), os.getuid()
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        try:
            if (not NAMES.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False)
                    or entry.stat(follow_symlinks=False).st_uid != uid):
                continue
            folder = Path(entry.path)
            if _stale(folder, here) and _remove(folder):
                removed.append(folder)
        except Exception:  # noqa: BLE001 - one folder's trouble is not the climb's; the next sweep tries again
            continue
    return removed
