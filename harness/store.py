"""The run folder: runs/<id>/{run.json, events.jsonl, iter-NNN/{kernel.py, diff.patch, result.json}, best/, report.md}.

No API key or secret is ever written here: the model is recorded by its spec string only.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from rungs.core.errors import BadInput
from harness.events import IterationFinished, Journal
from rungs.core.spec import TaskSpec
from rungs.core.result import Verdict
from rungs.core.atomic import atomic_write


class RunInfo(BaseModel):
    """run.json: what the run is, for `harness runs` and `harness resume`."""

    id: str
    task_path: str
    task: dict[str, Any]
    """Snapshot of the task spec as it was when the run started."""
    model: str
    status: str = "running"
    stop_reason: str = ""
    created: float = Field(default_factory=time.time)
    parent: str | None = None
    """The run this one was forked from, with its iteration: 'RUN@K'."""
    budgets: dict[str, Any] = Field(default_factory=dict)
    dumps_dir: str | None = None
    """Where this run's compiler dumps go (`<dumps_dir>/<id>/iter-NNN/`), for the report's links and resume."""
    pid: int | None = None
    """The process running the loop while status is 'running'; a dead pid means the run crashed (resumable)."""
    sandbox: str = ""
    """How candidate code was isolated (rungs/sandbox/bwrap.note): 'UNSANDBOXED ...' when the user opted out."""
    strategy: str = "latest"
    """How each round's candidates are chosen (harness/search.py): latest, greedy, beam:K, best-of-n."""
    candidates: int = 1
    """Candidates the model writes per round (iteration)."""
    profile: str = "all"
    """Which timed candidates are profiled: all, or improving (faster than the best so far): `--profile`."""
    gpus: list[dict[str, Any]] = Field(default_factory=list)
    """The GPUs the run climbs on (`--gpus`), each {"index", "name"}; each candidate's result.json says which one
    timed it (verdict.gpu). Empty: no GPU, or the executor's own (Ray)."""
    live_steering: bool = False
    """The running process reads `harness steer` from the journal as it goes (`harness mcp`), so steering a
    running run is allowed; cleared when the run stops."""


def new_run_id(task_name: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{task_name}-{secrets.token_hex(2)}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kernel_sha(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:12]


EMPTY_SHA = kernel_sha("")
"""An iteration with no kernel (the model sent none)."""


def iter_dumps(dumps_root: Path | str, run_id: str, n: int) -> Path:
    """The one place a run's dump folders are named: `<dumps root>/<run id>/iter-NNN/` (the dumps and profile rungs
    write there; the report, the get_dump tool, resume and fork read there)."""
    return Path(dumps_root) / run_id / f"iter-{n:03d}"


def best_of(iterations: list[IterationFinished]) -> IterationFinished | None:
    """The passing iteration with the lowest runtime; without timings (CPU), the latest passing one."""
    passing = [e for e in iterations if e.verdict.verdict == "pass" and e.duplicate_of is None]
    if not passing:
        return None
    timed = [e for e in passing if e.verdict.metric("runtime_us") is not None]
    if timed:
        return min(timed, key=lambda e: e.verdict.metric("runtime_us"))
    return passing[-1]


class RunStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = Journal(root / "events.jsonl")

    # ---- creation and loading ---------------------------------------------------------------------
    @classmethod
    def create(cls, runs_dir: Path, task: TaskSpec, model: str, budgets: dict[str, Any],
               sandbox: str = "", strategy: str = "latest", candidates: int = 1,
               gpus: list[dict[str, Any]] | None = None, profile: str = "all") -> "RunStore":
        run_id = new_run_id(task.name)
        root = runs_dir / run_id
        root.mkdir(parents=True)
        store = cls(root)
        info = RunInfo(id=run_id, task_path=str(task.path), task=task.model_dump(mode="json"), model=model,
                       budgets=budgets, sandbox=sandbox, strategy=strategy, candidates=candidates, gpus=gpus or [],
                       profile=profile)
        store.write_info(info)
        return store

    @classmethod
    def open(cls, path: Path) -> "RunStore":
        if not (path / "run.json").is_file():
            raise BadInput(f"{path}: not a run folder (no run.json)")
        return cls(path)

    @property
    def id(self) -> str:
        return self.root.name

    def info(self) -> RunInfo:
        return RunInfo.model_validate_json((self.root / "run.json").read_text())

    def write_info(self, info: RunInfo) -> None:
        atomic_write(self.root / "run.json", info.model_dump_json(indent=2))

    def set_status(self, status: str, reason: str = "") -> None:
        info = self.info()
        info.status, info.stop_reason, info.pid, info.live_steering = status, reason, None, False
        self.write_info(info)

    def mark_running(self, dumps_dir: Path) -> None:
        info = self.info()
        info.status, info.stop_reason, info.pid = "running", "", os.getpid()
        info.dumps_dir = str(dumps_dir.resolve())
        self.write_info(info)

    def running_pid(self) -> int | None:
        """The pid of a live process running this run's loop, or None (stopped, or crashed)."""
        info = self.info()
        if info.status == "running" and info.pid and info.pid != os.getpid() and pid_alive(info.pid):
            return info.pid
        return None

    def display_status(self) -> str:
        """The status as `harness runs` shows it: a 'running' run whose process is gone crashed."""
        info = self.info()
        if info.status == "running" and not (info.pid and pid_alive(info.pid)):
            return "crashed"
        return info.status

    # ---- iterations -----------------------------------------------------------------------------
    def iter_dir(self, n: int) -> Path:
        return self.root / f"iter-{n:03d}"

    def iterations(self) -> list[IterationFinished]:
        return [e for e in self.journal.read() if isinstance(e, IterationFinished)]

    def kernel_of(self, n: int) -> str:
        path = self.iter_dir(n) / "kernel.py"
        if not path.is_file():
            raise BadInput(f"{self.root}: iteration {n} has no kernel.py")
        return path.read_text()

    def save_kernel(self, n: int, code: str, previous: str | None) -> Path:
        d = self.iter_dir(n)
        d.mkdir(exist_ok=True)
        (d / "kernel.py").write_text(code)
        diff = difflib.unified_diff((previous or "").splitlines(keepends=True), code.splitlines(keepends=True),
                                    "previous/kernel.py", f"iter-{n:03d}/kernel.py")
        (d / "diff.patch").write_text("".join(diff))
        return d / "kernel.py"

    def save_result(self, n: int, verdict: Verdict) -> None:
        (self.iter_dir(n) / "result.json").write_text(verdict.model_dump_json(indent=2))

    def best(self) -> IterationFinished | None:
        return best_of(self.iterations())

    def update_best(self) -> None:
        best = self.best()
        dest = self.root / "best"
        if best is None:
            return
        dest.mkdir(exist_ok=True)
        shutil.copy2(self.iter_dir(best.iteration) / "kernel.py", dest / "kernel.py")
        (dest / "result.json").write_text(json.dumps({"iteration": best.iteration,
                                                      **best.verdict.model_dump(mode="json")}, indent=2))
