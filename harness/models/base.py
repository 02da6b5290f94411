"""The model plug point: messages and tools in, one response (text, tool calls, usage) out.

Every provider (anthropic, openai, openai-compatible, replay, human) implements `Model`.
The agent loop never sees a provider's own types.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Iterator, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """One call the model asked for."""

    id: str
    """Provider's call id (made up by the replay model), echoed back in the tool result."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolSpec(BaseModel):
    """A tool offered to the model, described by a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""


class Message(BaseModel):
    """One turn of the conversation, in a provider-neutral form."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Only on assistant messages."""
    tool_call_id: str | None = None
    """Only on tool messages: the call this answers."""


class Usage(BaseModel):
    """Tokens and money one model call cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Input tokens served from the provider's prompt cache (a subset of input_tokens)."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (a subset of input_tokens; Anthropic bills them higher)."""
    cost_usd: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


class ModelResponse(BaseModel):
    """What one model call returned."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


class ModelError(Exception):
    """A model that cannot answer (after the SDK's own retries): ends the run, which stays resumable."""


class TranscriptExhausted(Exception):
    """A replayed transcript has no turns left."""


@runtime_checkable
class Model(Protocol):
    """A model is one method. `name` is the spec string it was made from (`replay:tasks/x.jsonl`)."""

    name: str

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse: ...


def retry_settings(max_retries: int | None = None, timeout: float | None = None) -> dict[str, Any]:
    """The SDK clients' retry count and per-request timeout: the arguments when given, else HARNESS_MODEL_RETRIES
    (default 4) and HARNESS_MODEL_TIMEOUT in seconds (default 600)."""
    return {"max_retries": max_retries if max_retries is not None else int(os.environ.get("HARNESS_MODEL_RETRIES", 4)),
            "timeout": timeout if timeout is not None else float(os.environ.get("HARNESS_MODEL_TIMEOUT", 600))}


def one_line(exc: BaseException) -> str:
    """The provider's own error message when its body has one ({"error": {"message"}} or {"message"}), on one line."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("message"):
        text = str(body["error"]["message"])
    elif isinstance(body, dict) and body.get("message"):
        text = str(body["message"])
    else:
        text = str(getattr(exc, "message", None) or exc)
    return " ".join(text.split())[:300]


@contextmanager
def sdk_errors(sdk: ModuleType, name: str, client: Any) -> Iterator[None]:
    """Turn what an official SDK raises after its own retries (anthropic and openai share the exception names)
    into a one-line ModelError: the run ends with that reason and stays resumable."""
    try:
        yield
    except sdk.APIStatusError as exc:
        raise ModelError(f"{name}: HTTP {exc.status_code}: {one_line(exc)}") from None
    except sdk.APITimeoutError:
        raise ModelError(f"{name}: timed out after {client.max_retries} retries") from None
    except sdk.APIConnectionError as exc:
        raise ModelError(f"{name}: cannot reach {client.base_url} after {client.max_retries} retries: "
                         f"{one_line(exc.__cause__ or exc)}") from None
    except (sdk.APIError, ValueError) as exc:  # a body that is not the API's JSON
        raise ModelError(f"{name}: malformed response ({type(exc).__name__}): {one_line(exc)}") from None
