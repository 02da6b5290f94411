"""Several GPUs (`--gpus`, rungs/sandbox/gpus.py, harness/executors.gpu_pools) and the GPU-seconds budget, on a CPU.

The device choice is tested with CPU pools given GPU indexes: the real loop hands each candidate to one pool at a
time, each verdict records the pool's index, name and held seconds, the sandboxed worker and the trusted helper
processes (ncu's and the sections' sandbox, baselines, the bench-shape reference) are started pinned to that index,
and the run stops on the GPU-seconds budget, also after a resume. The H200 side is benchmarks/gpus_check.sh.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import TASKS
from lean import journal
from test_search import ROWWISE, bad, write_transcript
from test_steer import harness

from harness.agent import Agent, AgentConfig, QuietObserver
from harness.executors import Ray, gpu_pools, parse_executor
from harness.models import load_model
from harness.resume import resume_agent
from harness.search import parse_strategy
from harness.store import RunStore
from rungs import backends
from rungs.ladder import benchmark
from rungs.sandbox import gpus, pool as sandbox_pool
from rungs.core.errors import BadInput


def test_gpus_option_parses_indexes_and_all_and_names_what_is_there():
    two = ("NVIDIA H200", "NVIDIA H200")
    assert gpus.parse("0,1", two) == [0, 1] and gpus.parse("1", two) == [1] and gpus.parse("all", two) == [0, 1]
    assert gpus.parse(" 1, 0,1", two) == [1, 0] and gpus.parse(None, two) == [0] and gpus.parse(None, ()) == []
    with pytest.raises(BadInput, match=r"there is no GPU 2; this machine has 2 \(0: NVIDIA H200, 1: NVIDIA H200\)"):
        gpus.parse("0,2", two)
    with pytest.raises(BadInput, match="'x' is not a GPU index"):
        gpus.parse("0,x", two)
    with pytest.raises(BadInput, match="this machine has no CUDA device"):
        gpus.parse("all", ())


def test_parallel_on_gpus_makes_that_many_pools_per_gpu_and_they_share_one_timing_lock(monkeypatch):
    """--parallel P with GPUs: P pools pinned to each listed GPU (their climbs overlap; their timings take turns
    through the GPU's lock, whose name is the GPU's, not the pool's)."""
    from harness.cli_common import placement

    monkeypatch.setattr(gpus, "names", lambda: ("NVIDIA H200", "NVIDIA H200"))
    monkeypatch.setattr(gpus, "devices", lambda: (gpus.Device("NVIDIA H200", "GPU-aaa"), gpus.Device("NVIDIA H200", "GPU-bbb")))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _, pools = placement(None, "local", None, 3)
    assert [p.index for p in pools] == [0, 0, 0] and len({id(p) for p in pools}) == 3
    _, pools = placement("0,1", "local", None, 2)
    assert [p.index for p in pools] == [0, 0, 1, 1]
    assert [gpus.identity(p.pinned_env()) for p in pools] == ["GPU-aaa", "GPU-aaa", "GPU-bbb", "GPU-bbb"]
    _, pools = placement(None, "local", None, 1)
    assert [p.index for p in pools] == [0]


def test_a_gpu_that_is_not_there_is_one_line_exit_2():
    p = harness("run", str(TASKS / "softmax.yaml"), "--gpus", "0,1")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert [ln for ln in p.stderr.splitlines() if ln.strip()] == \
        ["error: --gpus '0,1': there is no GPU 0; this machine has no CUDA device"]


def test_an_index_is_the_harness_own_view_of_the_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.pinned_env(1) == {"CUDA_VISIBLE_DEVICES": "1"} and gpus.pinned_env(None) == {}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")  # the harness itself was given two of the machine's GPUs
    assert gpus.physical(0) == "5" and gpus.physical(1) == "7" and gpus.pinned_env(1) == {"CUDA_VISIBLE_DEVICES": "7"}
    assert gpus.index_of("7") == 1 and gpus.index_of("5") == 0


def test_ray_gets_the_listed_gpus_and_a_cluster_is_refused(monkeypatch):
    from harness.executors import _only_gpus

    pytest.importorskip("ray")
    assert parse_executor("ray", gpus=[1]) == Ray(gpus=[1])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,5")
    with _only_gpus([2, 0]):  # what a local Ray instance finds as it starts
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "5,2"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3,5"
    with pytest.raises(BadInput, match="--gpus with --ray-address"):
        parse_executor("ray", "10.0.0.1:6379", gpus=[0])


def test_the_worker_and_the_trusted_processes_are_started_on_the_pool_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    pool = sandbox_pool.WorkerPool("cpu", 1, "cpu")
    try:
        pool.prestart("triton", interpret=True)
        worker = pool._spares[("triton", True)][0]
        started = dict(kv.split("=", 1) for kv in
                       Path(f"/proc/{worker.proc.pid}/environ").read_bytes().decode().split("\0") if "=" in kv)
        assert started["CUDA_VISIBLE_DEVICES"] == "6"  # the harness's GPU 1: the machine's 6
        assert pool._env(backends.get("triton"))["CUDA_VISIBLE_DEVICES"] == "6"
    finally:
        pool.stop()
    # ncu and the sections' build run through run_command, in the candidates' sandbox: pinned the same way
    job = tmp_path / "job"
    job.mkdir()
    out = tmp_path / "env.out"
    outcome = sandbox_pool.run_command(["/usr/bin/env"], job, 60, out, extra_env=pool.pinned_env())
    assert outcome.returncode == 0 and "CUDA_VISIBLE_DEVICES=6" in out.read_text().splitlines()
    assert benchmark.trusted_env(pool.pinned_env())["CUDA_VISIBLE_DEVICES"] == "6"  # baselines, bench reference


def test_a_pool_starts_a_rounds_workers_together_and_a_gpu_job_waits_until_all_have_started():
    """One GPU climbs a round's candidates one after another: each should find its worker started (warm_round, while
    the model writes them), and none may be timed while a worker is still importing torch (rungs/sandbox/pool.settle,
    before a GPU job's hand-over)."""
    pool = sandbox_pool.WorkerPool("cpu")
    key = ("triton", False)
    spares: list = []
    taken = None
    try:
        sandbox_pool.keep_warm(True)
        pool.warm_round(3)  # no climb yet and no word of which folders a worker must show: none starts
        assert not pool._spares.get(key)
        pool.warm_round(1, ("triton", ()))  # the run's first round says (Agent.warm_round: from the task)
        assert len(pool._spares[key]) == 1
        pool.warm_next("triton")  # a climb ended: the next candidate's worker, already there
        assert len(pool._spares[key]) == 1
        pool.warm_round(3)  # the next round climbs three here: two more start beside the first
        spares = list(pool._spares[key])
        assert len(spares) == 3
        assert not all(w.started for w in spares)  # Python and torch take seconds: still starting
        sandbox_pool.settle(timeout_s=180)
        assert all((w.job_dir / sandbox_pool.READY_FILE).is_file() and w.proc.poll() is None for w in spares)
        taken = pool.take("triton", False, ())
        assert taken is spares[0] and pool._spares[key] == spares[1:]  # the oldest first
        pool.warm_next("triton")  # the round still has its workers: none more start beside the next climb
        assert pool._spares[key] == spares[1:]
        sandbox_pool.isolation.kill_job(spares[1].proc, spares[1].marker)
        assert pool.take("triton", False, ()) is spares[2]  # a dead one is dropped, not handed a job
    finally:
        sandbox_pool.keep_warm(False)
        pool.stop()
        for w in [taken, *spares]:  # taken ones are no longer the pool's to stop
            if w is not None and w.home.exists():
                sandbox_pool._discard(w)


def test_a_worker_that_never_gets_ready_is_dropped_not_waited_for_at_every_climb(tmp_path):
    pool = sandbox_pool.WorkerPool("cpu")
    home = tmp_path / "home"
    (home / "job").mkdir(parents=True)
    log = open(home / "log", "wb")
    stuck = sandbox_pool._Worker(subprocess.Popen(["sleep", "120"], start_new_session=True), home, home / "log", log, "stuck-marker", ())
    pool._spares[("triton", False)] = [stuck]
    try:
        t0 = time.monotonic()
        sandbox_pool.settle(timeout_s=1.0)
        assert time.monotonic() - t0 < 10
        assert pool._spares[("triton", False)] == [] and stuck.proc.poll() is not None and not home.exists()
    finally:
        stuck.proc.kill()
        pool.stop()


class Intervals(QuietObserver):
    """When each candidate's climb started and ended, by the observer's clock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: dict[int, list[float]] = {}

    def climb_started(self, node: int) -> None:
        self.spans[node] = [time.monotonic()]

    def iteration_finished(self, n: int, verdict, seconds: float) -> None:
        self.spans[n].append(time.monotonic())


def _agent(task, store, transcript: Path, tmp_path: Path, pools) -> Agent:
    return Agent(task=task, model=load_model(f"replay:{transcript}"), store=store, budgets=store_budgets(store),
                 dumps_root=tmp_path / "dumps", strategy=parse_strategy("greedy"), config=AgentConfig(candidates=4),
                 gpu_pools=pools)


def store_budgets(store: RunStore):
    from rungs.core.spec import Budgets

    return Budgets.model_validate(store.info().budgets)


def test_a_round_asks_each_gpu_pool_for_its_share_of_workers_before_the_model_writes(lean_softmax_task, tmp_path,
                                                                                      monkeypatch):
    import harness.agent as agent_module

    asked = []

    class Pool:  # what a round asks of each GPU's pool (the pools' own starting is the test above)
        def __init__(self, index):
            self.index = index

        def warm_round(self, count, first=None):
            asked.append((self.index, count, first))

    transcript = write_transcript(tmp_path / "rounds.jsonl", [[ROWWISE]])
    store = RunStore.create(tmp_path / "runs", lean_softmax_task, f"replay:{transcript}", {}, strategy="greedy",
                            candidates=4)
    agent = _agent(lean_softmax_task, store, transcript, tmp_path, [Pool(0), Pool(1), Pool(2)])
    agent.warm_round()
    assert asked == []  # no GPU: a CPU's few cores are busy enough
    monkeypatch.setattr(agent_module, "cuda_available", lambda: True)
    agent.warm_round()
    # four candidates over three GPUs: at most two climb on one; before any climb, for the task's DSL and the folder
    # of its input maker (what each climb's job shows its worker)
    first = ("triton", (str(lean_softmax_task.resolve("softmax_ref.py").parent),))
    assert asked == [(0, 2, first), (1, 2, first), (2, 2, first)]
    asked.clear()
    agent.config.candidates = 1
    agent.warm_round()
    assert asked == []  # one candidate a round: the last climb's warm_next started its worker


def test_a_round_climbs_one_candidate_per_gpu_at_a_time_and_records_which(lean_softmax_task, tmp_path):
    other = ROWWISE + "\n# the same kernel, another source: climbed again\n"
    transcript = write_transcript(tmp_path / "rounds.jsonl", [[ROWWISE, bad(1), other, ROWWISE]])
    budgets = lean_softmax_task.budgets.overridden({"iterations": 1})
    pools = gpu_pools([0, 1], ["cpu", "cpu"], device="cpu")
    store = RunStore.create(tmp_path / "runs", lean_softmax_task, f"replay:{transcript}", budgets.model_dump(),
                            strategy="greedy", candidates=4, gpus=[{"index": p.index, "name": p.name} for p in pools])
    seen = Intervals()
    stop = _agent(lean_softmax_task, store, transcript, tmp_path, pools).run(seen)
    assert stop.status == "budget", stop.reason
    done = {e["iteration"]: e for e in journal(store.root) if e["type"] == "iteration"}
    assert [done[n]["verdict"]["verdict"] for n in (1, 2, 3, 4)] == ["pass", "fail", "pass", "pass"]
    assert done[4]["duplicate_of"] == 1 and 4 not in seen.spans  # the same source: not climbed, holds no GPU
    held = {n: done[n]["verdict"]["gpu"] for n in (1, 2, 3)}
    assert all(g["name"] == "cpu" and g["seconds"] > 0 for g in held.values())
    by_gpu: dict[int, list[list[float]]] = {}
    for n, g in held.items():
        by_gpu.setdefault(g["index"], []).append(seen.spans[n])
    assert sorted(by_gpu) == [0, 1]  # both pools climbed
    for spans in by_gpu.values():  # one climb per pool at a time
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    first, second = seen.spans[1], seen.spans[3]  # the two full climbs went side by side, on different pools
    assert held[1]["index"] != held[3]["index"] and first[0] < second[1] and second[0] < first[1]
    result = json.loads((store.root / "iter-003" / "result.json").read_text())
    assert result["gpu"]["index"] == held[3]["index"]
    assert json.loads((store.root / "run.json").read_text())["gpus"] == [{"index": 0, "name": "cpu"},
                                                                         {"index": 1, "name": "cpu"}]
    md = (store.root / "report.md").read_text()
    assert "- GPUs: 0 (cpu): " in md and " GPU seconds" in md
    assert f"climbed on GPU {held[3]['index']} (cpu), held" in md


def test_the_gpu_seconds_budget_stops_the_run_and_a_resume(lean_softmax_task, tmp_path):
    transcript = write_transcript(tmp_path / "rounds.jsonl", [[bad(1), bad(2), bad(1), bad(3)]] * 3)
    budgets = lean_softmax_task.budgets.overridden({"gpu_seconds": 1e-6})
    pools = gpu_pools([0, 1], ["cpu", "cpu"], device="cpu")
    store = RunStore.create(tmp_path / "runs", lean_softmax_task, f"replay:{transcript}", budgets.model_dump(),
                            strategy="greedy", candidates=4)
    agent = _agent(lean_softmax_task, store, transcript, tmp_path, pools)
    stop = agent.run()
    events = [e for e in journal(store.root) if e["type"] == "iteration"]
    spent = sum(e["verdict"]["gpu"]["seconds"] for e in events if e["duplicate_of"] is None)
    assert agent.round == 1 and len(events) == 4 and spent > 0 and agent.gpu_seconds() == pytest.approx(spent)
    assert stop.status == "budget" and stop.reason.startswith("GPU-seconds budget spent (") and \
        stop.reason.endswith(f" of {1e-6:g} GPU seconds, summed over the GPUs)")
    again = resume_agent(store, llm=load_model(f"replay:{transcript}"), gpu_pools=pools).run()
    assert again.status == "budget" and again.reason.startswith("GPU-seconds budget spent")  # spent before: no round
    assert len([e for e in journal(store.root) if e["type"] == "iteration"]) == 4


def test_a_task_declares_a_gpu_seconds_budget(tmp_path):
    from harness.spec import load_task
    from lean import LEAN_YAML, lean_task

    task, _ = lean_task(tmp_path, [])
    task.write_text(LEAN_YAML.replace("budgets: {iterations: 8, minutes: 20}", "budgets: {gpu_seconds: 600}"))
    assert load_task(task).budgets.gpu_seconds == 600
    task.write_text(LEAN_YAML.replace("budgets: {iterations: 8, minutes: 20}", "budgets: {gpu_seconds: 0}"))
    with pytest.raises(BadInput, match="budgets.gpu_seconds"):
        load_task(task)


def test_max_gpu_seconds_is_a_budget_on_the_command_line(tmp_path):
    from lean import lean_task

    task, _ = lean_task(tmp_path, [])
    transcript = write_transcript(tmp_path / "one.jsonl", [[bad(1)]])
    p = harness("run", str(task), "--model", f"replay:{transcript}", "--max-gpu-seconds", "90", "--runs-dir",
                str(tmp_path / "runs"), "--dumps-dir", str(tmp_path / "dumps"), "-q")
    assert p.returncode == 0, p.stderr
    info = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert info["budgets"]["gpu_seconds"] == 90 and info["gpus"] == []  # a CPU: no GPU to climb on


def _two_gpus(tmp_path, monkeypatch):
    """A machine of two GPUs as the driver and torch describe it: /proc/driver/nvidia/gpus and /dev, in tmp_path."""
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    for bus, minor in (("0000:19:00.0", 0), ("0000:3b:00.0", 1)):
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nDevice Minor: \t {minor}\n")
    (dev / "nvidia-caps").mkdir(parents=True)
    for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"):
        (dev / node).touch()
    found = (gpus.Device("NVIDIA H200", "GPU-aaaa", "0000:19:00.0"), gpus.Device("NVIDIA H200", "GPU-bbbb", "0000:3b:00.0"))
    monkeypatch.setattr(gpus, "devices", lambda: found)
    monkeypatch.setattr(gpus, "DRIVER_GPUS", proc)
    return dev


def test_a_sandbox_pinned_to_one_of_two_gpus_gets_only_its_device_node(tmp_path, monkeypatch):
    """On a machine of several GPUs, a climb's sandbox may open its own GPU and the driver's shared nodes, not the
    GPU another climb is timing on; the pin names the GPU by UUID (CUDA in the sandbox numbers what it can open)."""
    from rungs.sandbox import bwrap

    dev = _two_gpus(tmp_path, monkeypatch)
    env = gpus.pinned_env(1)
    assert env == {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}
    nodes = gpus.sandbox_nodes(env, dev)
    assert sorted(Path(n).name for n in nodes) == ["nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools",
                                                   "nvidia1", "nvidiactl"]
    args = bwrap.command(["true"], bwrap.Policy(cuda=True, gpu_nodes=nodes), bwrap="bwrap")
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert bound == nodes and str(dev / "nvidia0") not in args
    assert gpus.sandbox_nodes(gpus.pinned_env(0), dev)[-1] == str(dev / "nvidia0")
    # the driver's PCI spelling (nvidia-smi's 8-digit domain) is the same address
    assert gpus._minor("00000000:3B:00.0") == 1 and gpus._minor("0000:5e:00.0") is None


def test_without_a_known_node_every_gpu_node_stays_and_the_pin_is_the_index(tmp_path, monkeypatch):
    """One GPU, an unpinned process, a driver folder that does not say: the sandbox keeps every node (as before)."""
    from rungs.sandbox import bwrap

    dev = _two_gpus(tmp_path, monkeypatch)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.sandbox_nodes({}, dev) is None and gpus.sandbox_nodes({"CUDA_VISIBLE_DEVICES": "1"}, dev) is None
    (tmp_path / "proc" / "0000:3b:00.0" / "information").write_text("Model: NVIDIA H200\n")  # no minor
    assert gpus.pinned_env(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    monkeypatch.setattr(gpus, "devices", lambda: (gpus.Device("NVIDIA H200", "GPU-aaaa", "0000:19:00.0"),))
    assert gpus.pinned_env(0) == {"CUDA_VISIBLE_DEVICES": "0"}  # one GPU: nothing to keep out of sight
    args = bwrap.command(["true"], bwrap.Policy(cuda=True), bwrap="bwrap")
    assert [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"] == sorted(
        str(p) for p in Path("/dev").glob("nvidia*"))
