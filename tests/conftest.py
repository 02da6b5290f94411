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
def gpu_baselines(tmp_path_factory):
    """One baseline cache for the GPU tests: eager and torch.compile of a reference are timed once a session,
    not once a test (torch.compile alone takes seconds per task)."""
    return tmp_path_factory.mktemp("baselines")
