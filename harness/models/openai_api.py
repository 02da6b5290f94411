"""OpenAI's Chat Completions API with tools, through the official `openai` SDK; also any server that speaks
it (vLLM, SGLang, Ollama, llama.cpp's llama-server, ...).

Spec strings:
- `openai:<model>` (`openai:gpt-5.4`; a bare `openai` means that one): key from OPENAI_API_KEY, endpoint from OPENAI_BASE_URL when set.
- `openai-compatible:<base-url>:<model>` (`openai-compatible:http://127.0.0.1:8000/v1:Qwen/Qwen3-32B`, or
  `...:11434/v1:llama3.1:8b` for Ollama; the model name may hold colons): key from OPENAI_COMPATIBLE_API_KEY,
  else OPENAI_API_KEY, else a dummy (local servers want none).

A server that refuses tools (HTTP 400 naming them) is asked again without; the model then submits its kernel
in a fenced block. The SDK retries 408/409/429/5xx and connection errors with backoff; what still fails
becomes a ModelError with a one-line reason.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

from rungs.core.errors import BadInput
from harness.models.base import (Message, ModelError, ModelResponse, ToolCall, ToolSpec, Usage, one_line, retry_settings,
                                 sdk_errors)
from harness.prices import cost_usd

DEFAULT_MODEL = "gpt-5.4"
_BASE_AND_MODEL = re.compile(r"^(https?://[^/\s]+(?:/[^:\s]*)?):(.+)$")


class OpenAIModel:
    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_retries: int | None = None, timeout: float | None = None, provider: str = "openai") -> None:
        import openai

        self.model = model or DEFAULT_MODEL
        self.name = f"{provider}:{base_url}:{self.model}" if provider == "openai-compatible" else f"{provider}:{self.model}"
        if provider == "openai-compatible":
            key = api_key or os.environ.get("OPENAI_COMPATIBLE_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        else:
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                raise BadInput(f"model {self.name}: OPENAI_API_KEY is not set")
        self.tools_supported = True
        self.client = openai.OpenAI(api_key=key, base_url=base_url, **retry_settings(max_retries, timeout))

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": to_wire(messages)}
        if tools and self.tools_supported:
            kwargs["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                                 "parameters": t.parameters}} for t in tools]
        with sdk_errors(openai, self.name, self.client):
            try:
                reply = self.client.chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if "tools" not in kwargs or "tool" not in str(exc).lower():
                    raise
                self.tools_supported = False  # a server without tool calling: fenced code blocks from now on
                del kwargs["tools"]
                reply = self.client.chat.completions.create(**kwargs)
        try:
            return self.parse(reply)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
            raise ModelError(f"{self.name}: malformed response ({type(exc).__name__}): {one_line(exc)}") from None

    def parse(self, reply: Any) -> ModelResponse:
        if isinstance(reply, (str, bytes)) or not reply.choices:
            raise ValueError("no choices in the reply")
        message = reply.choices[0].message
        calls = []
        for c in message.tool_calls or []:
            try:
                arguments = json.loads(c.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"_unparsed_arguments": c.function.arguments}
            calls.append(ToolCall(id=c.id, name=c.function.name,
                                  arguments=arguments if isinstance(arguments, dict) else {"value": arguments}))
        usage = Usage()
        if reply.usage is not None:
            details = getattr(reply.usage, "prompt_tokens_details", None)
            usage = Usage(input_tokens=reply.usage.prompt_tokens or 0, output_tokens=reply.usage.completion_tokens or 0,
                          cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0)
        usage.cost_usd = cost_usd(self.model, usage)
        return ModelResponse(text=message.content or "", tool_calls=calls, usage=usage)


class OpenAICompatibleModel(OpenAIModel):
    """`openai-compatible:<base-url>:<model>`."""

    def __init__(self, rest: str, **kwargs: Any) -> None:
        match = _BASE_AND_MODEL.match(rest)
        if not match:
            raise BadInput(f"model spec 'openai-compatible:{rest}': expected openai-compatible:<base-url>:<model>, "
                           f"e.g. openai-compatible:http://127.0.0.1:8000/v1:my-model")
        super().__init__(match.group(2), base_url=match.group(1), provider="openai-compatible", **kwargs)


def to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            wire.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            wire.append({"role": "assistant", "content": m.content or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in m.tool_calls]})
        else:
            wire.append({"role": m.role, "content": m.content})
    return wire
