"""Options, help and messages as a person types them (issue 12): -h, --version, flags in --help, option ranges,
user text printed as written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TASKS
import warm


def harness(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return warm.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, "COLUMNS": "120", **(env or {})}, timeout=120)


@pytest.mark.parametrize("args", [["-h"], ["run", "-h"], ["check", "-h"], ["context", "-h"], ["resume", "-h"]])
def test_dash_h_is_help(args):
    p = harness(*args)
    assert p.returncode == 0, p.stderr
    assert "Usage:" in p.stdout and "--help" in p.stdout and "-h" in p.stdout


def test_version():
    from importlib.metadata import version

    p = harness("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"harness {version('kernel-harness')}"


def test_flags_show_no_value_in_help():
    p = harness("run", "--help")
    assert p.returncode == 0
    assert "<bool>" not in p.stdout, p.stdout
    quiet = next(ln for ln in p.stdout.splitlines() if "--quiet" in ln)
    assert "No live view" in quiet


@pytest.mark.parametrize("option, value", [("--max-iterations", "-3"), ("--max-iterations", "0"),
                                           ("--timeout-s", "0"), ("--max-minutes", "-1")])
def test_out_of_range_options_exit_2_before_a_run(tmp_path, option, value):
    p = harness("run", str(TASKS / "softmax.yaml"), option, value, "--runs-dir", str(tmp_path / "runs"))
    assert p.returncode == 2, p.stderr
    assert option in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "runs").exists()  # no empty run was made


@pytest.mark.parametrize("spec, var", [("anthropic:x", "ANTHROPIC_API_KEY"), ("openai:x", "OPENAI_API_KEY"),
                                       ("anthropic:smile:", "ANTHROPIC_API_KEY")])
def test_user_text_is_printed_as_written(spec, var):
    """rich read `:x:` as an emoji code and printed `anthropic❌`."""
    p = harness("run", str(TASKS / "softmax.yaml"), "--model", spec)
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: --model {spec}: {var} is not set", p.stderr


def test_a_bad_shape_value_exits_2_naming_file_line_and_key(tmp_path):
    (tmp_path / "ref.py").write_text((TASKS / "softmax_ref.py").read_text())
    task = tmp_path / "t.yaml"
    task.write_text("name: t\ndescription: d\nreference: ref.py:reference\ninputs: ref.py:make_inputs\n"
                    "dtypes: [float32]\nshapes:\n  test:\n    - {M: 2, N: seven}\nroofline:\n  bytes: \"8*M*N\"\n")
    p = harness("check", str(task), str(TASKS / "demos" / "softmax_3_rowwise.py"))
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip() == (f"error: {task}:8: key 'shapes.test.0.N': shape variable N is 'seven', not a number "
                                "(the roofline bytes formula uses it)")


@pytest.mark.parametrize("command", ["run", "resume", "check", "mcp", "eval", "steer"])
def test_help_is_whole_at_80_columns(command):
    """Issue 37: at 80 columns `run --help` cut the model list (`openai-compatible:<base…`)."""
    p = harness(command, "--help", env={"COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    assert "…" not in p.stdout and max(map(len, p.stdout.splitlines())) <= 80, p.stdout
    if command == "run":  # the whole model list, and the other way to bring a model: a coding agent over MCP
        words = "".join(p.stdout.replace("│", " ").split())
        for spec in ("anthropic[:MODEL]", "openai[:MODEL]", "openai-compatible:URL:MODEL", "replay:FILE", "human",
                     "harnessmcpTASK"):
            assert spec in words, (spec, p.stdout)
