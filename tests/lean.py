"""A lean copy of the softmax task for steering tests: one small shape, one seed, so each ladder is quick. Its bench
shape needs the same specialization as its test shape (BLOCK=8, N not a multiple of 16): the compile phase's build
at the bench shape (for the dumps) then costs no second compile."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from conftest import ROOT, TASKS
import warm

LEAN_YAML = """\
name: softmax
description: Row softmax over the last dimension (a lean copy for tests).
dsl: triton
entry: kernel
signature: "kernel(x: Tensor[M, N] float32) -> Tensor[M, N] float32"
reference: softmax_ref.py:reference
inputs: softmax_ref.py:make_inputs
dtypes: [float32]
distributions: [normal]
seeds: 1
shapes:
  test:
    - {M: 4, N: 7}
  bench:
    - {M: 32768, N: 8}
roofline: {flops: "5*M*N", bytes: "2*4*M*N", target: 0.9, unit: fp32}
budgets: {iterations: 8, minutes: 20}
"""

DEMOS = TASKS / "demos"


def lean_task(tmp: Path, turns: list[str]) -> tuple[Path, Path]:
    """(task file, transcript) in tmp; `turns` are demo kernel file names, one model turn each."""
    tmp.mkdir(parents=True, exist_ok=True)
    # On a GPU the sandboxed worker (uid 65534) draws the bench inputs from softmax_ref.py itself: pytest's folders
    # are mode 700 (seen on the H200: "lean0 has mode 700: the sandbox's user cannot enter it")
    for folder in (tmp, *tmp.parents):
        if folder == Path(tempfile.gettempdir()) or folder == folder.parent:
            break
        folder.chmod(folder.stat().st_mode | 0o001)
    shutil.copy(TASKS / "softmax_ref.py", tmp / "softmax_ref.py")
    (tmp / "lean.yaml").write_text(LEAN_YAML)
    transcript = tmp / "lean.demo.jsonl"
    transcript.write_text("".join(json.dumps({"text": f"turn {i + 1}: {name}",
                                              "code_file": os.path.relpath(DEMOS / name, tmp)}) + "\n"
                                  for i, name in enumerate(turns)))
    return tmp / "lean.yaml", transcript


def journal(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]


def lean_demo_task(tmp: Path) -> Path:
    """The lean task with the shipped softmax demo transcript as its own (`harness run` with no --model and no key
    replays it): the demo's whole story at one small shape. The shipped task's full test shapes are climbed in-process
    by test_ladder (the tuned demo) and test_correctness (the row-wise demo and the wrong kernels)."""
    task, _ = lean_task(tmp, [])
    task.write_text(LEAN_YAML + f"transcript: {os.path.relpath(TASKS / 'softmax.demo.jsonl', tmp)}\n")
    return task


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _written(path: Path) -> list[dict]:
    """The journal's complete lines so far (the run may be writing its last one as it is read)."""
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def kill_when(cmd: list[str], runs: Path, ready: Callable[[list[dict]], bool], env: dict[str, str],
              what: str, timeout: float = 240) -> Path:
    """Start `harness ...` (cmd), SIGKILL it and its workers once its run's journal satisfies `ready`; the run folder.
    Its temporary folder is one beside `runs`: what a SIGKILL leaves (its workers' homes) stays in the test's folder."""
    (runs.parent / "killed-tmp").mkdir(parents=True, exist_ok=True)
    env = {**env, "TMPDIR": str(runs.parent / "killed-tmp")}
    p = warm.Popen([sys.executable, "-m", "harness.cli", *cmd], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline, run = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            found = list(runs.glob("*/events.jsonl")) if runs.is_dir() else []
            if found and ready(_written(found[0])):
                run = found[0].parent
                break
            assert p.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        assert run is not None, f"{what} never started"
        workers = children(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        for w in workers:  # the ladder's worker runs in its own session
            try:
                os.killpg(w, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        p.kill()
        p.wait()
    return run
