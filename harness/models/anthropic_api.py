"""Anthropic's Messages API with tools, through the official `anthropic` SDK.

Spec string: `anthropic:<model>` (`anthropic:claude-sonnet-4-6`; a bare `anthropic` means that one). The key
comes from ANTHROPIC_API_KEY and the endpoint from ANTHROPIC_BASE_URL when set (the SDK reads both); neither
is ever written anywhere.

Prompt caching: the system prompt (with the tools before it) and the newest message carry `cache_control`,
so each tool turn of an iteration reads the conversation so far from the cache and pays full price only for
what is new. The SDK retries 408/409/429/5xx and connection errors with backoff (honouring retry-after);
what still fails becomes a ModelError with a one-line reason.
"""
from __future__ import annotations

import os
from typing import Any

from rungs.core.errors import BadInput
from harness.models.base import (Message, ModelError, ModelResponse, ToolCall, ToolSpec, Usage, one_line, retry_settings,
                                 sdk_errors)
from harness.prices import cost_usd

DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 16384
"""Output tokens per reply: a whole kernel file with its reasoning, below the SDK's non-streaming limit."""
_CACHE = {"type": "ephemeral"}


class AnthropicModel:
    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_retries: int | None = None, timeout: float | None = None, max_tokens: int = MAX_TOKENS) -> None:
        import anthropic

        self.model = model or DEFAULT_MODEL
        self.name = f"anthropic:{self.model}"
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise BadInput(f"model {self.name}: ANTHROPIC_API_KEY is not set")
        self.max_tokens = max_tokens
        self.thinking: dict[str, list[dict[str, Any]]] = {}
        """Thinking blocks that preceded each tool call, by the id of its first tool_use."""
        self.client = anthropic.Anthropic(api_key=key, base_url=base_url, **retry_settings(max_retries, timeout))

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        import anthropic

        system, wire = to_wire(messages, self.thinking)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": wire}
        if system:
            kwargs["system"] = [{"type": "text", "text": system, "cache_control": _CACHE}]
        if tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                               for t in tools]
        with sdk_errors(anthropic, self.name, self.client):
            reply = self.client.messages.create(**kwargs)
        try:
            return self.parse(reply)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise ModelError(f"{self.name}: malformed response ({type(exc).__name__}): {one_line(exc)}") from None

    def parse(self, reply: Any) -> ModelResponse:
        texts, calls, thinking = [], [], []
        for block in reply.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {})))
            elif block.type in ("thinking", "redacted_thinking"):
                thinking.append(block.model_dump(exclude_none=True))
        if calls and thinking:
            self.thinking[calls[0].id] = thinking
        u = reply.usage
        cache_read = u.cache_read_input_tokens or 0
        cache_write = u.cache_creation_input_tokens or 0
        usage = Usage(input_tokens=u.input_tokens + cache_read + cache_write, output_tokens=u.output_tokens,
                      cached_tokens=cache_read, cache_write_tokens=cache_write)
        usage.cost_usd = cost_usd(self.model, usage)
        return ModelResponse(text="\n".join(texts), tool_calls=calls, usage=usage)


def to_wire(messages: list[Message], thinking: dict[str, list[dict[str, Any]]] | None = None
            ) -> tuple[str, list[dict[str, Any]]]:
    """Our messages as (system text, Messages API turns). Tool results go as tool_result blocks in a user
    turn; consecutive user-side blocks share one turn so that roles alternate; an assistant turn with tool
    calls gets back the thinking blocks that preceded them. The newest block is marked for caching."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})

    for m in messages:
        if m.role == "system":
            system.append(m.content)
        elif m.role == "user":
            add("user", {"type": "text", "text": m.content or "(empty)"})
        elif m.role == "tool":
            add("user", {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content or "(empty)"})
        else:
            blocks = list((thinking or {}).get(m.tool_calls[0].id, [])) if m.tool_calls else []
            blocks += [{"type": "text", "text": m.content}] if m.content.strip() else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
            for block in blocks or [{"type": "text", "text": "(no reply)"}]:
                add("assistant", block)
    if turns:
        turns[-1]["content"][-1]["cache_control"] = _CACHE
    return "\n\n".join(system), turns
