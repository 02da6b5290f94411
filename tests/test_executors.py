"""`--executor ray` (harness/executors.py) on a local Ray instance on the CPU: a round of two candidates climbs as Ray
tasks, and the run journals the same tree, verdicts and dumps as the local executor's, while the driver itself
starts no candidate worker; inside the Ray worker every candidate still runs in the bubblewrap sandbox (a probe that
reads the harness's files and the run's journal is contained); a bad `--executor` and a missing ray are one line,
exit 2.
"""
from __future__ import annotations

import logging
import subprocess
from collections import Counter
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TASKS
from lean import journal
from test_isolation import probe_held, probes_source
from test_search import ROWWISE, bad, tree, write_transcript
from test_steer import env

from harness.agent import Agent, AgentConfig, QuietObserver
from harness.executors import Local, Ray, parse_executor
from harness.models import load_model
from harness.search import parse_strategy
from harness.store import RunStore
from rungs.sandbox import bwrap, pool
from rungs.core.errors import BadInput
from rungs.ladder.rung import RUNGS


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def spawned(monkeypatch) -> list[str]:
    """Candidate workers this process starts (a spy on rungs.sandbox.pool._spawn: each is still started)."""
    seen: list[str] = []
    real = pool._spawn

    def spy(device: str, *args, **kwargs):
        seen.append(device)
        return real(device, *args, **kwargs)

    monkeypatch.setattr(pool, "_spawn", spy)
    return seen


class Labels(QuietObserver):
    """Which candidate each rung result is told under (the live view names the climbing one)."""

    def __init__(self) -> None:
        self.climbing: int | None = None
        self.rungs: list[tuple[int | None, str]] = []

    def climb_started(self, n: int) -> None:
        self.climbing = n

    def rung_finished(self, result) -> None:
        self.rungs.append((self.climbing, result.name))


def run_with(executor, task, transcript: Path, tmp: Path, observer=None, **ladder) -> RunStore:
    budgets = task.budgets.overridden({"iterations": 2})
    store = RunStore.create(tmp / "runs", task, f"replay:{transcript}", budgets.model_dump(), strategy="greedy",
                            candidates=2)
    agent = Agent(task=task, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
                  dumps_root=tmp / "dumps", strategy=parse_strategy("greedy"), executor=executor,
                  config=AgentConfig(candidates=2, ladder_options={"base_seed": 7, **ladder}))
    assert agent.run(observer or QuietObserver()).reason == "iteration budget spent (2 iterations)"
    return store


def verdicts(events: list[dict]) -> list[tuple]:
    """Each candidate's verdict, less what differs from one climb to the next (seconds)."""
    return [(e["iteration"], e["verdict"]["verdict"], e["verdict"]["sandbox"],
             [(r["name"], r["status"], r["message"]) for r in e["verdict"]["rungs"]])
            for e in events if e["type"] == "iteration"]


def dump_files(tmp: Path, store: RunStore) -> list[str]:
    folder = tmp / "dumps" / store.id
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_ray_climbs_the_same_tree_and_verdicts_as_local(local_ray, lean_softmax_task, tmp_path, spawned):
    transcript = write_transcript(tmp_path / "rounds.jsonl", [[ROWWISE, bad(1)], [bad(2), ROWWISE]])
    pool.default_pool("cpu").stop()  # a zygote an earlier test's climb gave back would start no worker here
    local = run_with(Local(), lean_softmax_task, transcript, tmp_path / "local")
    assert spawned, "the local executor climbs in this process"
    spawned.clear()
    seen = Labels()
    remote = run_with(parse_executor("ray"), lean_softmax_task, transcript, tmp_path / "ray", observer=seen)
    assert spawned == [], "with --executor ray no candidate worker starts in the driver"
    assert Counter(n for n, _ in seen.rungs) == {1: len(RUNGS), 2: len(RUNGS), 3: len(RUNGS)}
    assert (1, "compile") in seen.rungs
    events = journal(remote.root)
    # greedy: round 2 improves on the pass; its row-wise kernel is the first's, not climbed again
    assert tree(events) == tree(journal(local.root)) == [
        (1, 1, None, None, False, None), (2, 1, None, None, False, "precheck"),
        (3, 2, 1, None, True, "precheck"), (4, 2, 1, 1, False, None)]
    assert verdicts(events) == verdicts(journal(local.root))
    assert events[-2]["verdict"]["sandbox"].startswith("bwrap sandbox:")
    assert dump_files(tmp_path / "ray", remote) == dump_files(tmp_path / "local", local)
    assert any(f.startswith("iter-001/") for f in dump_files(tmp_path / "ray", remote))
    assert (remote.root / "best" / "kernel.py").read_text() == ROWWISE and (remote.root / "report.html").is_file()


def test_a_candidate_in_a_ray_worker_is_sandboxed(local_ray, lean_softmax_task, tmp_path):
    """The probe reads the harness's own files and the task's reference from inside a Ray worker's climb (the static
    screen off, so it reaches the worker); test_isolation shows the same probe gets through with no sandbox."""
    probe = probes_source({"harness_and_home_files": dict(
        HARNESS_FILE=repr(str(ROOT / "harness" / "agent.py")), HOME_FILE=repr(str(ROOT / "README.md")),
        RUN_FILE=repr(str(lean_softmax_task.dir / "softmax_ref.py")))})
    transcript = write_transcript(tmp_path / "rounds.jsonl", [[probe, bad(1)], [bad(2), bad(3)]])
    store = run_with(Ray(), lean_softmax_task, transcript, tmp_path, static_checks=False)
    first = journal(store.root)[[e["type"] for e in journal(store.root)].index("iteration")]
    assert first["iteration"] == 1
    assert probe_held(first["verdict"]["rungs"], "harness_and_home_files") == []
    assert first["verdict"]["sandbox"] == bwrap.note() and bwrap.note().startswith("bwrap sandbox:")


def test_bad_executor_and_missing_ray_are_one_line_exit_2(tmp_path):
    with pytest.raises(BadInput, match="--ray-address needs --executor ray"):
        parse_executor("local", "10.0.0.1:6379")
    hide_ray = "import sys; sys.modules['ray'] = None; from harness.cli import main; main()"
    for argv, line in [
            (["-m", "harness.cli", "run", str(TASKS / "softmax.yaml"), "--executor", "dask"],
             "error: --executor 'dask': not an executor; known: local, ray"),
            (["-c", hide_ray, "run", str(TASKS / "softmax.yaml"), "--candidates", "2", "--executor", "ray"],
             "error: --executor ray: ray is not installed (pip install ray, on every host of the cluster)")]:
        p = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, env=env(), timeout=120)
        assert p.returncode == 2 and [ln for ln in p.stderr.splitlines() if ln.strip()] == [line], p.stderr
    assert not list(tmp_path.iterdir())
