"""Which rung a failure belongs to, and where in the candidate it happened.

The compile phase calls the candidate's launcher to find its Triton launches, so a launcher that raises, hangs or
dies in its own Python would look like a compile failure. The worker keeps a marker of whether it was inside
Triton's compiler (rungs/worker/job.WHERE_FILE) and, just before its time limit, every thread's stack
(rungs/worker/job.STACKS_FILE); this module reads them back into words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rungs.worker.job import STACKS_FILE, WHERE_FILE

_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_CANDIDATE_FRAME = re.compile(r"^\s+(?P<file>\S+\.py):(?P<line>\d+) in (?P<func>\w+):", re.M)


@dataclass
class Where:
    in_triton: bool | None
    """True: inside Triton (compiling, or the interpreter running a kernel); False: the candidate's own Python;
    None: unknown."""
    line: int | None = None
    func: str | None = None

    def words(self) -> str:
        at = f" at line {self.line} in {self.func}" if self.line else ""
        if self.in_triton is None:
            return at.strip()
        return ("inside Triton" if self.in_triton else "in plain Python") + at


def in_triton_at_death(job_dir: Path) -> bool | None:
    """From the compile phase's marker: was Triton compiling when the process stopped?"""
    try:
        state = (job_dir / WHERE_FILE).read_text().split()
    except OSError:
        return None
    return state[0] == "triton" if state else None


def launches_before_death(job_dir: Path) -> int:
    try:
        return int((job_dir / WHERE_FILE).read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def hung_at(job_dir: Path, kernel: Path) -> Where | None:
    """Where the main thread was shortly before the time limit: the candidate's innermost frame, and whether
    Triton's own code was running below it. None when no stack was written (the job did not run that long)."""
    try:
        text = (job_dir / STACKS_FILE).read_text()
    except OSError:
        return None
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    main = next((b for b in blocks if "rungs/worker/loop.py" in b), None)
    if main is None:
        return None
    frames = [m for m in (_FRAME.match(ln) for ln in main.splitlines()) if m]  # most recent call first
    # The worker ran its own copy of the kernel (rungs/sandbox/pool hands it over as <job>/candidate/<name>).
    targets = (str(kernel.resolve()), f"/candidate/{kernel.name}")
    for depth, frame in enumerate(frames):
        if frame["file"] == targets[0] or frame["file"].endswith(targets[1]):
            deeper = [f["file"] for f in frames[:depth]]
            in_triton = any("/triton/" in f for f in deeper)
            return Where(in_triton, int(frame["line"]), frame["func"])
    return Where(None)


def raised_at(traceback_text: str) -> Where:
    """The candidate's innermost frame in a worker's short traceback (`  kernel.py:12 in kernel: ...`)."""
    frames = _CANDIDATE_FRAME.findall(traceback_text)
    if not frames:
        return Where(False)
    _, line, func = frames[-1]
    return Where(False, int(line), func)
