"""Steering as a user does it: the interactive menu through a pseudo-terminal, and a run killed with
SIGKILL mid-iteration, steered and resumed from its journal. The real loop and the real ladder (CPU)."""
from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")  # in the test extra; absent on the bare GPU image

from conftest import ROOT  # noqa: E402 - after the importorskip
from lean import DEMOS, journal, kill_when, lean_task  # noqa: E402
import warm  # noqa: E402


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in ("VISUAL", "EDITOR")}
    return {**base, "PYTHONPATH": str(ROOT), "TERM": "dumb", **extra}


def harness(*args: str, timeout: float = 300, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                    env=env(**(env_extra or {})), timeout=timeout)


def prompt_of(events: list[dict], n: int) -> str:
    return next(e for e in events if e["type"] == "prompt" and e["iteration"] == n)["messages"][1]["content"]


def test_interactive_hint_edit_revert_and_ctrl_c_through_a_pty(tmp_path):
    task, transcript = lean_task(tmp_path, ["softmax_1_nocompile.py", "softmax_2_wrong.py", "softmax_3_rowwise.py"])
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\ncp "{DEMOS / "softmax_3_rowwise.py"}" "$1"\n')
    editor.chmod(0o755)
    child = warm.spawn(sys.executable, ["-m", "harness.cli", "run", str(task), "--interactive",
                                           "--model", f"replay:{transcript}", "--runs-dir", str(tmp_path / "runs"),
                                           "--dumps-dir", str(tmp_path / "dumps")],
                          cwd=str(ROOT), env=env(EDITOR=str(editor)), encoding="utf-8", timeout=180,
                          dimensions=(50, 250))
    child.logfile_read = open(tmp_path / "pty.log", "w")
    try:
        child.expect(r"iteration 1 \(model\): fail at compile")
        child.expect("choice")
        child.sendline("h")
        child.expect("hint for the model")
        child.sendline("HINT-7 masked lanes must load -inf")
        child.expect("the next prompt carries the hint")
        child.expect("choice")
        child.sendline("c")
        child.expect(r"iteration 2 \(model, from iteration 1\): fail at correctness")
        child.expect("choice")
        child.sendline("e")  # $EDITOR writes the row-wise kernel: checked and recorded as the user's iteration 3
        child.expect(r"iteration 3 \(user, from iteration 2\): pass")
        child.expect("choice")
        child.sendline("r")
        child.expect("revert to iteration")
        child.sendline("1")
        child.expect("improves on iteration 1's kernel")
        child.expect("choice")
        child.sendline("g")  # go on without asking; Ctrl-C pauses
        child.expect("iteration 4: asking the model")
        child.sendintr()
        if child.expect([r"paused in iteration 4 before", r"paused after iteration 4"]) == 0:
            child.expect("choice")
            child.sendline("c")  # finish iteration 4, then the full menu
            child.expect(r"iteration 4 \(model, from iteration 1\): pass")
        child.expect("s stop")
        child.expect("choice")
        child.sendline("s")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, (tmp_path / "pty.log").read_text()[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    events = journal(run)
    finished = {e["iteration"]: e for e in events if e["type"] == "iteration"}
    assert sorted(finished) == [1, 2, 3, 4]
    # the hint reached the next prompt, once
    assert "HINT-7 masked lanes must load -inf" in prompt_of(events, 2)
    assert "HINT-7" not in prompt_of(events, 4)
    # the edit went through the ladder as the user's iteration
    assert finished[3]["source"] == "user" and finished[3]["verdict"]["verdict"] == "pass"
    assert (run / "iter-003" / "kernel.py").read_text() == (DEMOS / "softmax_3_rowwise.py").read_text()
    assert any(e["type"] == "steer" and e["action"] == "edit" and e["iteration"] == 3 for e in events)
    # the revert: iteration 4 started from iteration 1's kernel (prompt and diff), not from the user's
    kernel1 = (run / "iter-001" / "kernel.py").read_text()
    assert "Kernel to improve on (chosen by the user)" in prompt_of(events, 4) and kernel1 in prompt_of(events, 4)
    expected = "".join(difflib.unified_diff(kernel1.splitlines(keepends=True),
                                            (run / "iter-004" / "kernel.py").read_text().splitlines(keepends=True),
                                            "previous/kernel.py", "iter-004/kernel.py"))
    assert (run / "iter-004" / "diff.patch").read_text() == expected
    assert finished[4]["source"] == "model" and finished[4]["verdict"]["verdict"] == "pass"
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "stopped" and info["pid"] is None
    assert events[-1]["type"] == "run_stopped" and "stopped by the user" in events[-1]["reason"]
    assert 'id="plot"' in (run / "report.html").read_text()


def test_sigkill_mid_iteration_then_steer_and_resume(tmp_path):
    task, transcript = lean_task(tmp_path, ["softmax_1_nocompile.py", "softmax_2_wrong.py", "softmax_3_rowwise.py"])
    runs = tmp_path / "runs"
    run = kill_when(["run", str(task), "-q", "--model", f"replay:{transcript}", "--runs-dir", str(runs),
                     "--dumps-dir", str(tmp_path / "dumps")], runs, env=env(), what="iteration 2",
                    # iteration 2's kernel is submitted and its ladder runs
                    ready=lambda events: any(e["type"] == "model_reply" and e["iteration"] == 2 for e in events))
    before = journal(run)
    assert [e["iteration"] for e in before if e["type"] == "iteration"] == [1], "iteration 2 finished before the kill"
    assert before[-1]["type"] != "run_stopped"
    kept = {name: (run / "iter-001" / name).read_bytes() for name in ("kernel.py", "diff.patch", "result.json")}
    assert (run / "iter-002" / "kernel.py").is_file()  # the half-done iteration left its folder

    listed = [json.loads(line) for line in harness("runs", "--runs-dir", str(runs), "--json").stdout.splitlines()]
    assert [(r["status"], r["iterations"]) for r in listed] == [("crashed", 1)]

    s = harness("steer", str(run), "--hint", "HINT-9 load -inf in masked lanes")
    assert s.returncode == 0, s.stderr
    killed = tmp_path / "killed-tmp"  # the killed run's temporary folder (kill_when): its workers' homes are there
    assert list(killed.glob("harness-worker-*")), "the SIGKILL left no worker home to find"
    r = harness("resume", str(run), "-q", env_extra={"TMPDIR": str(killed)})
    assert r.returncode == 0, r.stderr
    # the next harness to start workers there removed the killed one's homes (rungs/sandbox/leftovers.py)
    assert not list(killed.glob("harness-worker-*"))
    assert "resuming" in r.stdout and "no more turns" in r.stdout

    events = journal(run)
    assert events[:len(before)] == before  # append-only: nothing rewritten
    finished = [e for e in events if e["type"] == "iteration"]
    assert [(e["iteration"], e["verdict"]["failed_rung"]) for e in finished] == [(1, "compile"), (2, "correctness"),
                                                                                 (3, None)]
    for name, data in kept.items():
        assert (run / "iter-001" / name).read_bytes() == data
    resumed = next(e for e in events if e["type"] == "run_resumed")
    assert (resumed["next_iteration"], resumed["redone"], resumed["skipped_turns"]) == (2, 2, 1)
    # the in-flight iteration replayed its own turn (the wrong kernel), and the steered hint reached its prompt
    assert (run / "iter-002" / "kernel.py").read_text() == (DEMOS / "softmax_2_wrong.py").read_text()
    after = events[events.index(resumed):]
    first, second = [e["messages"][1]["content"] for e in after if e["type"] == "prompt"][:2]
    assert "HINT-9 load -inf in masked lanes" in first and "HINT-9" not in second
    assert json.loads((run / "run.json").read_text())["status"] == "transcript_end"

    d = harness("diff", str(run), "2", "3")
    assert d.returncode == 0 and "+++ iter-003/kernel.py" in d.stdout
    rep = harness("report", str(run))
    assert rep.returncode == 0 and "report.html" in rep.stdout
    assert "resumed at iteration 2 (iteration 2 was in flight: redone)" in (run / "report.md").read_text()

    f = harness("fork", str(run), "2")
    assert f.returncode == 0, f.stderr
    fork = Path(f.stdout.split("forked: ")[1].split(" (parent")[0])
    assert json.loads((fork / "run.json").read_text())["parent"] == f"{run.name}@2"
    assert sorted(p.name for p in fork.glob("iter-*")) == ["iter-001", "iter-002"]
    assert [e["iteration"] for e in journal(fork) if e["type"] == "iteration"] == [1, 2]
    rows = {r["id"]: r for r in map(json.loads, harness("runs", "--runs-dir", str(runs), "--json").stdout.splitlines())}
    assert rows[fork.name]["parent"] == f"{run.name}@2" and rows[run.name]["best_iteration"] == 3


def test_steering_commands_refuse_bad_input(tmp_path):
    task, transcript = lean_task(tmp_path, ["softmax_1_nocompile.py"])
    cases = [
        (["steer", str(tmp_path), "--hint", "x"], "not a run folder"),
        (["resume", "no-such-run", "--runs-dir", str(tmp_path)], "not a run folder"),
        (["runs", "--runs-dir", str(tmp_path / "nope")], "no such folder"),
        (["run", str(task), "--interactive", "--model", f"replay:{transcript}", "--runs-dir", str(tmp_path / "r")],
         "--interactive needs a terminal"),
    ]
    for args, expect in cases:
        p = harness(*args)
        assert p.returncode == 2 and expect in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_journal_state_counts_what_was_spent_and_what_is_pending():
    from harness.events import IterationFinished, ModelReplied, PromptSent, RunResumed, RunStarted, RunStopped, Steered
    from harness.models.base import Message, Usage
    from harness.resume import journal_state
    from harness.store import kernel_sha
    from rungs.core.result import Verdict

    def at(event, t):
        event.time = t
        return event

    reply = Message(role="assistant", content="x")
    ok = Verdict(verdict="pass")
    events = [at(RunStarted(task="t", model="m", budgets={}), 0.0),
              at(Steered(action="hint", text="h1"), 0.5),
              at(PromptSent(iteration=1, messages=[]), 1.0),
              at(ModelReplied(iteration=1, message=reply, usage=Usage(input_tokens=10, cost_usd=0.5)), 2.0),
              at(IterationFinished(iteration=1, kernel_sha=kernel_sha("k1"), verdict=ok), 10.0),
              at(IterationFinished(iteration=2, source="user", kernel_sha=kernel_sha("k2"), verdict=ok), 12.0),
              at(RunStopped(reason="budget", status="budget"), 13.0),
              at(Steered(action="hint", text="h2"), 100.0),  # offline: `harness steer`, not loop time
              at(Steered(action="revert", iteration=1), 101.0),
              at(RunResumed(next_iteration=3), 200.0),
              at(PromptSent(iteration=3, messages=[]), 201.0),
              at(ModelReplied(iteration=3, message=reply, usage=Usage(output_tokens=5)), 203.0)]  # then kill -9
    state = journal_state(events)
    assert (state.last_iteration, state.in_flight, state.skip_turns) == (2, 3, 1)
    assert state.hints == ["h2"]  # h1 was answered in iteration 1; h2 went out with the crashed prompt only
    assert state.base_iteration == 1
    assert state.spent_seconds == 13.0 + 3.0
    assert (state.usage.input_tokens, state.usage.output_tokens, state.usage.cost_usd) == (10, 5, 0.5)
