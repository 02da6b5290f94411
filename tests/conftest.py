"""Shared fixtures. GPU tests are marked `gpu` and skip without CUDA."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

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


@pytest.fixture(scope="session")
def gpu_baselines(tmp_path_factory):
    """One baseline cache for the GPU tests: eager and torch.compile of a reference are timed once a session,
    not once a test (torch.compile alone takes seconds per task)."""
    return tmp_path_factory.mktemp("baselines")
