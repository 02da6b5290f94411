"""Model registry: a short provider name maps to an import path, resolved lazily so that
`anthropic` is imported only when a user asks for it.

A model spec string is `<provider>:<rest>`: `replay:tasks/softmax.demo.jsonl`, `anthropic:claude-sonnet-4-6`,
`openai:gpt-5`, `openai-compatible:http://127.0.0.1:8000/v1:my-model`, `human`.
"""
from __future__ import annotations

import importlib

from rungs.core.errors import BadInput
from harness.models.base import Message, Model, ModelError, ModelResponse, ToolCall, ToolSpec, TranscriptExhausted, Usage

REGISTRY: dict[str, str] = {
    "replay": "harness.models.replay:ReplayModel",
    "anthropic": "harness.models.anthropic_api:AnthropicModel",
    "openai": "harness.models.openai_api:OpenAIModel",
    "openai-compatible": "harness.models.openai_api:OpenAICompatibleModel",
    "human": "harness.models.human:HumanModel",
    "mcp": "harness.models.mcp_bridge:from_spec",  # only `harness mcp` can build the real one (it says so)
}

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "anthropic:claude-sonnet-4-6",
    "openai": "openai:gpt-5.4",
}
"""What `harness run` uses when only a provider's key is set (and what a bare `--model anthropic` means)."""

__all__ = ["Message", "Model", "ModelError", "ModelResponse", "ToolCall", "ToolSpec", "TranscriptExhausted", "Usage",
           "load_model", "REGISTRY", "DEFAULT_MODELS"]


def load_model(spec: str) -> Model:
    """Build a model from its spec string; an unknown provider lists the known ones."""
    if spec in DEFAULT_MODELS:
        spec = DEFAULT_MODELS[spec]
    provider, _, rest = spec.partition(":")
    if provider not in REGISTRY:
        raise BadInput(f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(sorted(REGISTRY))}")
    module_name, _, class_name = REGISTRY[provider].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(rest)
