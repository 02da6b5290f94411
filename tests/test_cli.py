"""The `harness` command as a user runs it: exit codes, one-line errors, the run folder."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import KERNELS, ROOT, TASKS
from lean import lean_demo_task


def harness(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=timeout)


def test_run_replays_demo_and_writes_the_run_folder(tmp_path):
    task = lean_demo_task(tmp_path / "task")  # the shipped demo at one small shape: its full shapes cost minutes
    p = harness("run", str(task), "--runs-dir", str(tmp_path / "runs"),
                "--dumps-dir", str(tmp_path / "dumps"))
    assert p.returncode == 0, p.stderr
    assert "no API key set: replaying the demo transcript" in p.stderr
    run = Path(p.stdout.split("run folder: ")[1].strip())
    for name in ("run.json", "events.jsonl", "report.md", "best/kernel.py"):
        assert (run / name).is_file(), name
    for n in (1, 2, 3, 4):
        for name in ("kernel.py", "diff.patch", "result.json"):
            assert (run / f"iter-{n:03d}" / name).is_file()
    verdicts = [json.loads((run / f"iter-{n:03d}" / "result.json").read_text()) for n in (1, 2, 3, 4)]
    assert [(v["verdict"], v["failed_rung"]) for v in verdicts] == [
        ("fail", "compile"), ("fail", "correctness"), ("pass", None), ("pass", None)]
    assert "no more turns" in p.stdout
    # stdout is a pipe here: one plain progress line per rung as the run goes (issue 12: it was silent)
    assert re.search(r"^iteration 1: fail compile +arange's arguments", p.stdout, re.M), p.stdout
    assert re.search(r"^iteration 2: fail correctness +case c\d+ ", p.stdout, re.M), p.stdout
    assert re.search(r"^iteration 4:   ok dumps ", p.stdout, re.M) and "iteration 4: pass in " in p.stdout
    assert list((tmp_path / "dumps" / run.name / "iter-004").glob("*.sass"))
    # the best kernel passes a fresh check, and the JSON verdict follows DESIGN.md's contract
    c = harness("check", str(task), str(run / "best" / "kernel.py"), "--json")
    assert c.returncode == 0, c.stderr
    verdict = json.loads(c.stdout)
    assert verdict["verdict"] == "pass" and verdict["failed_rung"] is None
    assert {"name", "status", "message", "metrics"} <= set(verdict["rungs"][0])
    text = (run / "events.jsonl").read_text() + (run / "run.json").read_text()
    assert "sk-secret-value" not in text


def test_check_wrong_kernel_exits_1_with_rung_and_worst_element(tmp_path):
    p = harness("check", str(lean_demo_task(tmp_path)), str(TASKS / "demos" / "softmax_2_wrong.py"), "--json")
    assert p.returncode == 1
    v = json.loads(p.stdout)
    assert v["verdict"] == "fail" and v["failed_rung"] == "correctness"
    assert "worst element" in next(r for r in v["rungs"] if r["name"] == "correctness")["message"]


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nbogus: 1\n")
    cases = [
        (["check", str(bad), str(KERNELS / "fault_raise.py")], "bad.yaml:"),
        (["check", str(TASKS / "softmax.yaml"), str(tmp_path / "missing.py")], "no such kernel file"),
        (["run", str(TASKS / "softmax.yaml"), "--model", "nosuch:thing"], "unknown model provider 'nosuch'"),
        (["run", str(tmp_path / "nope.yaml")], "no such file"),
    ]
    for args, expect in cases:
        p = harness(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert expect in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_check_fault_kernel_fails_and_harness_survives(tmp_path):
    p = harness("check", str(lean_demo_task(tmp_path)), str(KERNELS / "fault_abort.py"), "--json")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    v = json.loads(p.stdout)
    assert v["failed_rung"] == "run"  # os.abort() in the entry's own Python, before any Triton launch (issue 12)
    assert "SIGABRT" in next(r for r in v["rungs"] if r["name"] == "run")["message"]
