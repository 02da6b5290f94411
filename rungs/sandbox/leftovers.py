"""Folders a harness process left in the temporary folder when it could not clean up (SIGKILL, a crash, the OOM
killer): each sandboxed worker's home (`harness-worker-*`, with the job's input files: gigabytes at KernelBench's
sizes) and `harness eval`'s pool folders (`harness-eval-*`, holding homes). The next harness process that starts
workers there removes the ones whose maker is gone.

Each such folder gets an owner record when it is made (`claim`): the maker's pid, its start time (so a recycled pid
is not taken for it), its PID namespace and the boot. A folder is removed only when all of these hold: its name is
one of the harness's, it is a real folder (not a link) owned by this uid, its record says the same boot and PID
namespace as this process and names a process that is gone (or another boot: nothing of it can be running). A
folder without a record, of another uid, or made in another PID namespace (a container beside this one sharing
/tmp, whose processes cannot be seen from here) is left alone. The record is written outside the job folder, the only
part of the home a worker can write, so a candidate cannot name another process as its maker.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

OWNER_FILE = "owner.json"
NAMES = re.compile(r"harness-(worker|eval)-[a-z0-9_]{8}")
"""mkdtemp's names for worker homes (rungs/sandbox/pool._spawn) and eval pool folders (harness/eval._pool_round)."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks after boot (/proc/PID/stat's 22nd field), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces or parentheses
    return fields[19] if len(fields) > 19 else None


def _here() -> dict[str, str]:
    def read(path: str, link: bool = False) -> str:
        try:
            return os.readlink(path) if link else Path(path).read_text().strip()
        except OSError:
            return ""
    return {"pidns": read("/proc/self/ns/pid", link=True), "boot": read("/proc/sys/kernel/random/boot_id")}


def claim(folder: Path) -> None:
    """Record this process as the maker of `folder` (just made by mkdtemp)."""
    pid = os.getpid()
    (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "start": _start_time(pid), **_here()}))


def _stale(folder: Path, here: dict[str, str]) -> bool:
    try:
        record = json.loads((folder / OWNER_FILE).read_text())
        pid, start, pidns, boot = int(record["pid"]), record["start"], record["pidns"], record["boot"]
    except (OSError, ValueError, KeyError, TypeError):
        return False  # no record (an older harness's, or one being made): not judged
    if not here["boot"] or not here["pidns"]:
        return False
    if boot != here["boot"]:
        return True
    if pidns != here["pidns"]:
        return False
    return _start_time(pid) != start or start is None


def sweep(parent: Path) -> list[Path]:
    """Remove the stale folders directly in `parent`; the ones removed."""
    here, uid, removed = _here(), os.getuid(), []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        try:
            if (not NAMES.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False)
                    or entry.stat(follow_symlinks=False).st_uid != uid):
                continue
        except OSError:
            continue
        folder = Path(entry.path)
        if _stale(folder, here):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
