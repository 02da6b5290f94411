"""The `harness` command as a user runs it: exit codes, one-line errors, the run folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import KERNELS, ROOT, TASKS
from lean import lean_demo_task, lean_task
import warm


def harness(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, **(env or {})}, timeout=timeout)


def test_run_replays_demo_and_writes_the_run_folder(demo_run):
    # `harness run` on the shipped demo at one small shape (its full shapes cost minutes), no --model, no API key;
    # made once a session (conftest.demo_run): tests/test_export.py exports the same run's best iteration
    p, task = demo_run, demo_run.task
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
    assert list((demo_run.dumps / run.name / "iter-004").glob("*.sass"))
    # the best kernel passes a fresh check, and the JSON verdict follows the README's contract (`harness check --json`)
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


def _unwritable(how: str, tmp_path: Path) -> tuple[list[str], Path]:
    """(a command prefix, a folder) where the folder cannot be written, even by root (the tests run as root, for whom
    chmod 555 stops nothing): a read-only bind mount of it (bwrap, the sandbox's own tool), or a file in its place."""
    if how == "file":
        (tmp_path / "taken").write_text("a file where the folder would be\n")
        return [], tmp_path / "taken"
    from rungs.sandbox.bwrap import find_bwrap

    ro = tmp_path / "ro"
    ro.mkdir()
    prefix = [find_bwrap() or "bwrap", "--dev-bind", "/", "/", "--ro-bind", str(ro), str(ro)]
    try:
        probe = subprocess.run([*prefix, "mkdir", str(ro / "x")], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        pytest.skip(f"no bwrap to make a read-only mount: {exc}")
    if "Read-only file system" not in probe.stderr:
        pytest.skip(f"bwrap made no read-only mount here: {probe.stderr.strip()}")
    return prefix, ro / "runs"


@pytest.mark.parametrize("how, option", [("read-only mount", "--runs-dir"), ("read-only mount", "--dumps-dir"),
                                         ("file", "--runs-dir")])
def test_a_folder_the_run_cannot_write_is_refused_in_one_line(how, option, tmp_path):
    """Issue 37: a read-only --runs-dir was `internal error: OSError` (exit 3); a read-only --dumps-dir failed a good
    kernel at the dumps rung. Now: exit 2 before anything runs, one line naming the folder and the fix."""
    prefix, bad = _unwritable(how, tmp_path)
    task, transcript = lean_task(tmp_path / "task", ["softmax_3_rowwise.py"])
    folders = {"--runs-dir": tmp_path / "runs", "--dumps-dir": tmp_path / "dumps", option: bad}
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    p = subprocess.run([*prefix, sys.executable, "-m", "harness.cli", "run", str(task), "-q",
                        "--model", f"replay:{transcript}", *(str(a) for kv in folders.items() for a in kv)],
                       cwd=ROOT, capture_output=True, text=True, env=base, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith(f"error: {option} {bad}: ") and p.stderr.rstrip().endswith(f"{option} DIR"), p.stderr
    assert ("Read-only file system" if how != "file" else "a file, not a folder") in p.stderr
    assert not list(tmp_path.glob("runs/*")), "a run was started"


@pytest.mark.parametrize("cache", ["writable", "unwritable"])
def test_an_internal_error_keeps_its_traceback_in_a_file_of_this_users(cache, tmp_path):
    """Issue 37: every user's internal errors went to one fixed file in the system temp folder, overwriting each
    other's. Now: a new file in the harness's cache folder, else in a folder of this user's under the temp folder."""
    (tmp_path / "a-file").write_text("")
    home = tmp_path / "cache" if cache == "writable" else tmp_path / "a-file" / "cache"
    env = {**os.environ, "KERNEL_HARNESS_CACHE": str(home), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    code = ("import sys, harness.cli as cli\n"
            "def bug(*args, **kwargs):\n    raise RuntimeError('a harness bug')\n"
            "cli.load_task = bug\nsys.argv = ['harness', 'check', 'task.yaml', 'tasks/demos/softmax_3_rowwise.py']\n"
            "cli.app()\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 3, p.stderr
    m = re.fullmatch(r"internal error: RuntimeError: a harness bug \(traceback in (\S+)\)\n", p.stderr)
    assert m, p.stderr
    log = Path(m[1])
    folder = home / "errors" if cache == "writable" else tmp_path / "tmp" / f"kernel-harness-{os.getuid()}"
    assert log.parent == folder and re.fullmatch(r"\d{8}-\d{6}-\d+\.txt", log.name), log
    assert "Traceback" in log.read_text() and "RuntimeError: a harness bug" in log.read_text()


def test_a_run_folder_on_a_read_only_mount_is_refused_in_one_line(tmp_path, demo_run):
    """steer and resume check the run folder first; any other command that meets a place it cannot write (here
    `report`, which rewrites report.md) says so in one line, exit 2, not as an internal error."""
    prefix, unwritable = _unwritable("read-only mount", tmp_path)
    runs = unwritable.parent  # the folder mounted read-only under `prefix`: writable outside it
    assert demo_run.returncode == 0, demo_run.stderr
    made = next(demo_run.runs.iterdir())  # a finished run (conftest.demo_run), copied: this one is the test's own
    shutil.copytree(made, runs / made.name)
    (run,) = [d for d in runs.iterdir() if (d / "run.json").is_file()]
    before = (run / "events.jsonl").read_text()
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for args, expect in [(["steer", str(run), "--hint", "x"], f"error: run folder {run}: cannot write there "),
                         (["resume", str(run)], f"error: run folder {run}: cannot write there "),
                         (["report", str(run)], f"error: {run / 'report.md'}: cannot write there ")]:
        p = subprocess.run([*prefix, sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True,
                           text=True, env=base, timeout=300)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert p.stderr.startswith(expect) and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
        assert "Read-only file system" in p.stderr
    assert (run / "events.jsonl").read_text() == before
