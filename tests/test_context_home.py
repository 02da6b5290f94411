"""The context registry belongs to one Python environment (issue 12: one venv's `triton` context pointed into
another venv's site-packages, because every environment shared ~/.cache/kernel-harness/contexts.json)."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

from conftest import ROOT


def home_of(python: str, env: dict[str, str]) -> Path:
    p = subprocess.run([python, "-c", "from harness.context import home; print(home())"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip())


def test_each_environment_has_its_own_registry(tmp_path):
    other = tmp_path / "other-venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(other)
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_HOME"}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    here, there = home_of(sys.executable, env), home_of(str(other / "bin" / "python"), env)
    assert here != there
    for h in (here, there):
        assert h.parent == tmp_path / "home" / ".cache" / "kernel-harness" / "envs"
    assert there.name.startswith("other-venv-")
    assert home_of(sys.executable, {**env, "HARNESS_HOME": str(tmp_path / "h")}) == tmp_path / "h"
