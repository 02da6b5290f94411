"""Which model `harness run` picks: --model, the task's model when its key is set, a provider default, replay."""
from __future__ import annotations

import pytest

from harness.cli import choose_model
from rungs.core.errors import BadInput
from harness.models import DEFAULT_MODELS


@pytest.fixture
def no_keys(monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_no_key_replays_the_demo(softmax_task, no_keys):
    assert choose_model(softmax_task, None).startswith("replay:")


def test_a_key_picks_that_providers_default(softmax_task, no_keys):
    no_keys.setenv("OPENAI_API_KEY", "sk-x")
    assert choose_model(softmax_task, None) == DEFAULT_MODELS["openai"]
    no_keys.setenv("ANTHROPIC_API_KEY", "sk-y")
    assert choose_model(softmax_task, None) == DEFAULT_MODELS["anthropic"]


def test_the_tasks_model_when_its_key_is_set(softmax_task, no_keys):
    task = softmax_task.model_copy(update={"model": "openai:gpt-5-mini"})
    assert choose_model(task, None).startswith("replay:")  # no key: the demo
    no_keys.setenv("ANTHROPIC_API_KEY", "sk-y")
    assert choose_model(task, None) == DEFAULT_MODELS["anthropic"]  # its key is missing, another is set
    no_keys.setenv("OPENAI_API_KEY", "sk-x")
    assert choose_model(task, None) == "openai:gpt-5-mini"
    local = softmax_task.model_copy(update={"model": "openai-compatible:http://127.0.0.1:8000/v1:m"})
    assert choose_model(local, None) == local.model  # a local server needs no key


def test_model_option_wins_and_needs_its_key(softmax_task, no_keys):
    assert choose_model(softmax_task, "openai-compatible:http://h:1/v1:m") == "openai-compatible:http://h:1/v1:m"
    assert choose_model(softmax_task, "human") == "human"
    with pytest.raises(BadInput, match="ANTHROPIC_API_KEY is not set"):
        choose_model(softmax_task, "anthropic:claude-opus-5")
    no_keys.setenv("ANTHROPIC_API_KEY", "sk-y")
    assert choose_model(softmax_task, "anthropic") == DEFAULT_MODELS["anthropic"]
