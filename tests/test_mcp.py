"""`harness mcp` driven by the MCP SDK's own client over stdio, as a coding agent drives it: a softmax run on a
CPU (a failing kernel, then a passing one) through the real loop and the real ladder, steered while it is live,
refused past its budget, then reported and resumed like any run."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import skip_unless_installed

skip_unless_installed("mcp", "the MCP SDK is not installed (pip install mcp)")

from conftest import ROOT, TASKS  # noqa: E402 - after the skip
from lean import DEMOS, journal, lean_task  # noqa: E402
import warm  # noqa: E402

TOOLS = {"task_spec", "status", "submit_kernel", "search_context", "read_context", "list_iterations", "diff",
         "get_dump"} | ({"get_profile", "get_sections"} if __import__("torch").cuda.is_available() else set())
"""The tools offered: the GPU-only ones (Nsight Compute's profile, the timed sections) only on a GPU."""


def env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**base, "PYTHONPATH": str(ROOT)}


def harness(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env(), timeout=timeout)


class Session:
    """One MCP client session against `harness mcp ARGS`: `calls` is a list of (tool, arguments) or callables run
    between calls (e.g. `harness steer`); each result is (text, is_error, seconds, progress messages). Any transport
    error the client saw (a stray line on the server's stdout is one) is kept in `transport_errors`."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.args = ["-m", "harness.cli", "mcp", *args]
        self.stderr = tmp / f"server-{time.monotonic_ns()}.err"
        self.transport_errors: list[Exception] = []
        self.tools: set[str] = set()

    def run(self, calls: list[Any]) -> list[Any]:
        return asyncio.run(self._run(calls))

    async def _run(self, calls: list[Any]) -> list[Any]:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):
                self.transport_errors.append(message)

        params = StdioServerParameters(command=sys.executable, args=self.args, cwd=ROOT, env=env())
        results: list[Any] = []
        with open(self.stderr, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    await session.initialize()
                    self.tools = {t.name for t in (await session.list_tools()).tools}
                    for item in calls:
                        if callable(item):
                            results.append(await asyncio.to_thread(item))
                            continue
                        name, arguments = item
                        progress: list[str] = []

                        async def on_progress(done: float, total: float | None, message: str | None) -> None:
                            progress.append(message or "")

                        t0 = time.monotonic()
                        res = await session.call_tool(name, arguments, read_timeout_seconds=280,
                                                      progress_callback=on_progress)
                        results.append((res.content[0].text, res.is_error, time.monotonic() - t0, progress))
        return results


def kernel(name: str) -> dict[str, str]:
    return {"code": (DEMOS / name).read_text(), "notes": f"demo {name}"}


def test_a_coding_agent_drives_a_run_over_mcp(tmp_path):
    task, transcript = lean_task(tmp_path, ["softmax_2_wrong.py", "softmax_3_rowwise.py"])
    runs, dumps = tmp_path / "runs", tmp_path / "dumps"
    common = ["--runs-dir", str(runs), "--dumps-dir", str(dumps)]
    steered: list[subprocess.CompletedProcess] = []

    def steer() -> None:
        (run,) = runs.iterdir()
        steered.append(harness("steer", str(run), "--hint", "HINT-MCP-7 masked lanes must load -inf"))

    s = Session(tmp_path, str(task), "--max-iterations", "2", *common)
    spec, status0, wrong, _, listed, right, refused, status1, diff = s.run([
        ("task_spec", {}), ("status", {}), ("submit_kernel", kernel("softmax_2_wrong.py")), steer,
        ("list_iterations", {}), ("submit_kernel", kernel("softmax_3_rowwise.py")),
        ("submit_kernel", kernel("softmax_3_rowwise.py")), ("status", {}), ("diff", {"a": 1, "b": 2})])
    assert s.transport_errors == [], "something other than MCP messages reached the server's stdout"
    assert s.tools == TOOLS
    (run,) = runs.iterdir()

    # what the agent saw: the prompt a --model run's model gets, then each verdict as the next prompt
    assert "Row softmax" in spec[0] and "Iteration 1 of at most 2" in spec[0] and not spec[1]
    st = json.loads(status0[0])
    assert (st["state"], st["next_iteration"], st["budgets_left"]["iterations"]) == ("waiting for a submission", 1, 2)
    assert not wrong[1] and "fail at correctness" in wrong[0] and "Iteration 2 of at most 2" in wrong[0]
    assert wrong[3][:4] == ["rung precheck", "rung compile", "rung run", "rung correctness"]  # progress notifications
    # the hint given with `harness steer` while the server runs reached the very next tool result, once
    assert steered[0].returncode == 0 and "next tool result" in steered[0].stdout, steered[0].stderr
    assert listed[0].startswith("[hint from the user (harness steer)] HINT-MCP-7") and "1: fail at correctness" in listed[0]
    assert not right[1] and "Iteration 2: pass" in right[0] and "iteration budget spent" in right[0]
    assert "HINT-MCP-7" not in right[0]
    # past the budget: refused at once, with why and how to go on; the read-only tools still answer
    assert refused[1] and refused[0].startswith("refused:") and "iteration budget spent" in refused[0]
    assert f"--run {run}" in refused[0] and refused[2] < 5
    st = json.loads(status1[0])
    assert (st["state"], st["best"]["iteration"], st["budgets_left"]["iterations"]) == ("stopped", 2, 0)
    assert "+++ iter-2" in diff[0]
    assert "iteration 1: fail at correctness" in s.stderr.read_text()  # progress goes to stderr

    # the journal is a normal run's: the same events as a --model (replay) run of the same two kernels
    events = journal(run)
    assert [e["type"] for e in events] == ["run_started", "prompt", "model_reply", "iteration", "prompt", "steer",
                                           "model_reply", "tool_call", "model_reply", "iteration", "run_stopped"]
    finished = [e for e in events if e["type"] == "iteration"]
    assert [(e["iteration"], e["verdict"]["failed_rung"], e["source"]) for e in finished] == [
        (1, "correctness", "model"), (2, None, "model")]
    assert events[-1]["status"] == "budget" and events[0]["model"] == "mcp"
    assert "HINT-MCP-7" in next(e for e in events if e["type"] == "tool_call")["result"]
    info = json.loads((run / "run.json").read_text())
    assert (info["status"], info["pid"], info["live_steering"], info["model"]) == ("budget", None, False, "mcp")
    assert (run / "iter-001" / "kernel.py").read_text() == (DEMOS / "softmax_2_wrong.py").read_text()
    assert (run / "best" / "kernel.py").read_text() == (DEMOS / "softmax_3_rowwise.py").read_text()

    r = harness("run", str(task), "-q", "--model", f"replay:{transcript}", "--max-iterations", "2", "--runs-dir",
                str(tmp_path / "replay-runs"), "--dumps-dir", str(dumps))
    assert r.returncode == 0, r.stderr
    (replayed,) = (tmp_path / "replay-runs").iterdir()
    other = journal(replayed)
    assert [e["type"] for e in other] == ["run_started", "prompt", "model_reply", "iteration", "prompt",
                                          "model_reply", "iteration", "run_stopped"]
    fields = lambda evs: {e["type"]: sorted(e) for e in evs}
    assert {k: v for k, v in fields(events).items() if k not in ("steer", "tool_call")} == fields(other)
    assert [(e["iteration"], e["verdict"]["failed_rung"]) for e in other if e["type"] == "iteration"] == [
        (1, "correctness"), (2, None)]
    assert json.loads((replayed / "run.json").read_text()).keys() == info.keys()
    tree = lambda root: sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".work" not in p.parts)
    assert tree(run) == tree(replayed)

    # harness report and harness resume accept the folder
    rep = harness("report", str(run))
    assert rep.returncode == 0 and "report.html" in rep.stdout, rep.stderr
    assert "mcp" in (run / "report.md").read_text()
    before = (run / "events.jsonl").read_text()
    res = harness("resume", str(run), "-q")  # no MCP client outside `harness mcp`: says so instead of hanging
    assert res.returncode == 2 and "harness mcp TASK --run RUN" in res.stderr and len(res.stderr.splitlines()) == 1
    assert (run / "events.jsonl").read_text() == before

    # resumed over MCP with a larger budget: iterations go on from 3, and the budget refuses again after it
    s2 = Session(tmp_path, str(task), "--run", str(run), "--max-iterations", "3", *common)
    status2, spec2, third, fourth = s2.run([("status", {}), ("task_spec", {}),
                                            ("submit_kernel", kernel("softmax_3_rowwise.py")),
                                            ("submit_kernel", kernel("softmax_2_wrong.py"))])
    assert s2.transport_errors == []
    st = json.loads(status2[0])
    assert (st["next_iteration"], st["finished_iterations"], st["budgets_left"]["iterations"]) == (3, 2, 1)
    assert "Iteration 3 of at most 3" in spec2[0]
    assert not third[1] and "Iteration 3: pass" in third[0] and fourth[1] and fourth[0].startswith("refused:")
    events = journal(run)
    resumed = next(e for e in events if e["type"] == "run_resumed")
    assert (resumed["next_iteration"], resumed["redone"], resumed["model"]) == (3, None, "mcp")
    assert [e["iteration"] for e in events if e["type"] == "iteration"] == [1, 2, 3]
    assert json.loads((run / "run.json").read_text())["status"] == "budget"
    assert harness("report", str(run)).returncode == 0
    # and another model can take over the folder (here a replay, fast-forwarded past the 4 turns already played:
    # its 5th plays iteration 4; one with no turn left is refused, issue 37)
    _, longer = lean_task(tmp_path / "longer", ["softmax_2_wrong.py"] * 4 + ["softmax_3_rowwise.py"])
    other_model = harness("resume", str(run), "-q", "--model", f"replay:{longer}", "--max-iterations", "4")
    assert other_model.returncode == 0 and f"resuming {run} at iteration 4" in other_model.stdout, other_model.stderr
    assert json.loads((run / "run.json").read_text())["model"] == f"replay:{longer}"
    assert [(e["iteration"], e["verdict"]["verdict"]) for e in journal(run) if e["type"] == "iteration"][-1] == \
        (4, "pass")


def test_past_the_wall_time_budget_a_submission_is_refused_without_a_climb(tmp_path):
    task, _ = lean_task(tmp_path, ["softmax_3_rowwise.py"])
    runs = tmp_path / "runs"
    s = Session(tmp_path, str(task), "--max-minutes", "0.002", "--runs-dir", str(runs), "--dumps-dir",
                str(tmp_path / "dumps"))
    (refused, status) = s.run([("submit_kernel", kernel("softmax_3_rowwise.py")), ("status", {})])
    assert refused[1] and refused[0].startswith("refused:") and "wall-time budget spent" in refused[0]
    assert refused[2] < 10  # no ladder ran
    assert json.loads(status[0])["state"] == "stopped"
    (run,) = runs.iterdir()
    events = journal(run)
    assert not [e for e in events if e["type"] == "iteration"] and not (run / "iter-001").exists()
    assert events[-1]["type"] == "run_stopped" and events[-1]["status"] == "budget"
    assert json.loads((run / "run.json").read_text())["status"] == "budget"


def test_bad_input_is_one_line_and_exit_2_before_serving(tmp_path):
    from rungs.core.spec import load_task
    from harness.store import RunStore

    store = RunStore.create(tmp_path / "runs", load_task(TASKS / "softmax.yaml"), "mcp", {})
    cases = [(["mcp", str(tmp_path / "nope.yaml")], "nope.yaml"),
             (["mcp", str(TASKS / "gemm.yaml"), "--run", str(store.root)], "a run of task 'softmax', not 'gemm'"),
             (["mcp", str(TASKS / "softmax.yaml"), "--run", str(tmp_path)], "not a run folder")]
    for args, expect in cases:
        r = harness(*args, timeout=120)
        assert r.returncode == 2 and expect in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == "", (args, r.stdout)


def test_the_bridge_answers_each_call_with_what_the_loop_made_of_it():
    """The hand-over alone (no server, no ladder): a call that comes before the loop's first prompt gets the tool's
    answer, not that prompt; a submission gets the next prompt; a stop reaches the loop; then calls are refused."""
    import threading

    from harness.agent import UserStopped
    from harness.models.base import Message, ToolCall
    from harness.models.mcp_bridge import McpModel

    bridge = McpModel()
    taken: list[str] = []

    def loop() -> None:
        time.sleep(0.3)  # the client's first call is already waiting
        messages = [Message(role="system", content="S"), Message(role="user", content="PROMPT-1")]
        first = bridge.respond(messages, [])
        taken.append(first.tool_calls[0].name)
        messages += [Message(role="assistant", tool_calls=first.tool_calls), Message(role="tool", content="LIST")]
        taken.append(bridge.respond(messages, []).tool_calls[0].name)
        try:
            bridge.respond([Message(role="system", content="S"), Message(role="user", content="PROMPT-2")], [])
        except UserStopped as stop:
            bridge.end(stop.reason)

    thread = threading.Thread(target=loop)
    thread.start()
    assert bridge.call(ToolCall(id="1", name="list_iterations")) == "LIST"
    assert bridge.messages[1].content == "PROMPT-1"
    assert bridge.call(ToolCall(id="2", name="submit_kernel", arguments={"code": "x"})) == "PROMPT-2"
    bridge.stop(UserStopped("the client went away"))
    thread.join(timeout=10)
    assert not thread.is_alive() and taken == ["list_iterations", "submit_kernel"]
    assert bridge.ended == "the client went away" and bridge.call(ToolCall(id="3", name="diff")) is None


def test_a_client_that_disconnects_leaves_a_stopped_resumable_run(tmp_path):
    task, _ = lean_task(tmp_path, ["softmax_3_rowwise.py"])
    runs = tmp_path / "runs"
    s = Session(tmp_path, str(task), "--runs-dir", str(runs), "--dumps-dir", str(tmp_path / "dumps"))
    (spec,) = s.run([("task_spec", {})])
    assert "Iteration 1 of at most 8" in spec[0]
    (run,) = runs.iterdir()
    deadline = time.monotonic() + 30  # the server journals the stop after the client has gone
    while json.loads((run / "run.json").read_text())["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    info = json.loads((run / "run.json").read_text())
    assert (info["status"], info["pid"]) == ("stopped", None) and "MCP client disconnected" in info["stop_reason"]
    events = journal(run)
    assert [e["type"] for e in events] == ["run_started", "prompt", "run_stopped"]
    listed = [json.loads(line) for line in harness("runs", "--runs-dir", str(runs), "--json").stdout.splitlines()]
    assert [(r["status"], r["iterations"]) for r in listed] == [("stopped", 0)]
