"""Shared fixtures. GPU tests are marked `gpu` and skip without CUDA; tests that open a page in headless Chromium
are marked `chromium` and skip without the browser, except in CI (env CI set), where .ci/run installs it and a
missing browser fails them."""
from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, NoReturn

import pytest
import torch

import warm

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"
KERNELS = Path(__file__).resolve().parent / "kernels"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


CHROMIUM_MISSING = "no headless Chromium on PATH (apt-get install -y chromium; .ci/run installs it)"


def skip_unless_installed(package: str, reason: str) -> None:
    """Skips the calling test module when `package` is not installed, without importing it (pytest.importorskip
    imports it): each xdist worker collects every module, and tilelang's import is 2.9 s, mcp's 1.4 and cutlass's 1.1
    on this machine; the worker that runs their tests imports them then."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(reason, allow_module_level=True)


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing_chromium() -> NoReturn:
    """A test that needs the browser where there is none: a one-line skip, or a failure in CI (which installs it)."""
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM_MISSING}; CI (env CI={os.environ['CI']}) runs the chromium tests", pytrace=False)
    pytest.skip(CHROMIUM_MISSING)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("chromium") is not None and chromium_binary() is None:
        missing_chromium()


@pytest.fixture(scope="session")
def softmax_task():
    from rungs.core.spec import load_task

    return load_task(TASKS / "softmax.yaml")


@pytest.fixture(scope="session")
def lean_softmax_task(tmp_path_factory):
    """The softmax task at one small shape and one seed (tests/lean.py), for tests of the loop and the tools, where
    the kernel's verdict matters and not the shipped task's full shapes (each full climb interprets 21 cases)."""
    from harness.spec import load_task
    from lean import lean_demo_task

    return load_task(lean_demo_task(tmp_path_factory.mktemp("lean")))


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test session's temporary folder, the same for every pytest-xdist worker (each has its own below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def gpu_baselines(tmp_path_factory):
    """One baseline cache for the GPU tests: eager and torch.compile of a reference are timed once a session,
    not once a test (torch.compile alone takes seconds per task), and shared by the pytest-xdist workers (written
    atomically, so two workers timing the same reference at once both leave a whole file)."""
    folder = session_folder(tmp_path_factory) / "gpu-baselines"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def gpu_alone():
    """The GPU's timing lock (rungs/timing/gpu_lock.py) for a test that times the GPU itself (measure(), not a
    climb): no climb of another test process times beside it."""
    from rungs.sandbox import gpus
    from rungs.timing import gpu_lock

    with gpu_lock.held_for(gpus.identity({})) as info:
        yield info


JUDGE_RUNGS = ("precheck", "compile", "run", "correctness", "benchmark")


def judge_rungs() -> list:
    """The rungs that judge a candidate, up to the benchmark's timed calls: GPU tests of a refusal stop there (no
    dumps, witness, sections or roofline: the witness alone is 15-20 s of ncu a climb on the H200)."""
    from rungs.ladder.rung import rung

    return [rung(name) for name in JUDGE_RUNGS]


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder made by `make(folder)` once per test session, whichever test process (pytest-xdist worker) asks first;
    the others wait for it and share it. For slow things several tests only read (a finished run's folder): each
    test checks its own facts of the same run. `make` raising leaves nothing behind; the next test to ask tries again."""
    base = session_folder(tmp_path_factory)
    folder = base / f"made-once-{name}"
    with open(base / f"made-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


@pytest.fixture
def demo_run(tmp_path_factory):
    """`harness run` on the lean demo task (tests/lean.py: the shipped softmax demo transcript at one small shape),
    no --model and no API key: the README's main command. Made once per session (made_once) and read by
    tests/test_cli.py (the run's output and folder; a copy of it on a read-only mount) and tests/test_export.py (its
    best iteration, the tuned demo).
    Returns the process's returncode, stdout and stderr, and the task, runs and dumps folders."""
    from lean import lean_demo_task

    def make(folder: Path) -> None:
        task = lean_demo_task(folder / "task")
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        p = warm.run([sys.executable, "-m", "harness.cli", "run", str(task), "--runs-dir", str(folder / "runs"),
                            "--dumps-dir", str(folder / "dumps")], cwd=ROOT, capture_output=True, text=True,
                           env=env, timeout=600)
        (folder / "process.json").write_text(json.dumps({"returncode": p.returncode, "stdout": p.stdout,
                                                         "stderr": p.stderr}))

    folder = made_once(tmp_path_factory, "demo-run", make)
    return SimpleNamespace(**json.loads((folder / "process.json").read_text()), task=folder / "task" / "lean.yaml",
                           runs=folder / "runs", dumps=folder / "dumps")
