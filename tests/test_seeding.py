"""rungs/core/seeding.manual_seed: the draws torch.manual_seed gives, without its stack captures."""
from __future__ import annotations

import traceback

import pytest
import torch

from rungs.core import seeding


def test_the_same_draws_as_torch_manual_seed_without_a_stack_capture(monkeypatch):
    for seed in (0, 7, 2**40 + 3):
        torch.manual_seed(seed)
        want = (torch.randn(5), torch.randint(0, 100, (4,)), torch.rand(3, dtype=torch.float64))
        torch.manual_seed(seed + 1)  # a different state in between
        seeding.manual_seed(seed)
        got = (torch.randn(5), torch.randint(0, 100, (4,)), torch.rand(3, dtype=torch.float64))
        assert all(torch.equal(a, b) for a, b in zip(want, got)), seed

    def no_stacks(*a, **k):
        raise AssertionError("a stack was captured")

    if torch.cuda.is_available():
        return  # CUDA's seed is queued with its stack there, as torch queues it (when CUDA has not started)
    monkeypatch.setattr(traceback, "format_stack", no_stacks)
    seeding.manual_seed(3)
    with pytest.raises(AssertionError, match="a stack was captured"):  # queued for CUDA, XPU, MTIA, each captured
        torch.manual_seed(3)
