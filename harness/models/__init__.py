"""Model registry: a short provider name maps to an import path, resolved lazily so that
`anthropic` is imported only when a user asks for it.

A model spec string is `<provider>:<rest>`: `replay:tasks/softmax.demo.jsonl`, `anthropic:claude-sonnet-4-5`,
`openai:gpt-5`, `openai-compatible:http://127.0.0.1:8000/v1:my-model`, `human`.
"""
from __future__ import annotations

import importlib

from harness.errors import BadInput
from harness.models.base import Message, Model, ModelError, ModelResponse, ToolCall, ToolSpec, TranscriptExhausted, Usage

REGISTRY: dict[str, str] = {
    "replay": "harness.models.replay:ReplayModel",
}

__all__ = ["Message", "Model", "ModelError", "ModelResponse", "ToolCall", "ToolSpec", "TranscriptExhausted", "Usage",
           "load_model", "REGISTRY"]


def load_model(spec: str) -> Model:
    """Build a model from its spec string; an unknown provider lists the known ones."""
    provider, _, rest = spec.partition(":")
    if provider not in REGISTRY:
        raise BadInput(f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(sorted(REGISTRY))}")
    module_name, _, class_name = REGISTRY[provider].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(rest)
