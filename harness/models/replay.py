"""Replays a transcript: a JSONL file of assistant turns, played in order whatever the prompt says.

Each line is `{"text": "...", "tool_calls": [{"name": ..., "arguments": {...}}], "code_file": "demos/x.py"}`;
all keys optional. `code_file` (relative to the transcript) is appended to the text as a fenced python
block, so demo kernels stay real files that can be read, linted and checked on their own.
"""
from __future__ import annotations

import json
from pathlib import Path

from rungs.core.errors import BadInput
from harness.models.base import Message, ModelResponse, ToolCall, ToolSpec, TranscriptExhausted, Usage


class ReplayModel:
    def __init__(self, path: str) -> None:
        self.name = f"replay:{path}"
        self.path = Path(path)
        self.turns = load_transcript(self.path)
        self.position = 0

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        if self.position >= len(self.turns):
            raise TranscriptExhausted(f"transcript {self.path} has no more turns ({len(self.turns)} played)")
        turn = self.turns[self.position]
        self.position += 1
        return turn.model_copy(deep=True)

    def skip(self, n: int) -> None:
        """Fast-forward past `n` turns already played (a resumed run's finished iterations)."""
        self.position = min(self.position + n, len(self.turns))


def load_transcript(path: Path) -> list[ModelResponse]:
    if not path.is_file():
        raise BadInput(f"{path}: transcript not found")
    turns = []
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise BadInput(f"{path}:{lineno}: expected an object with 'text', 'tool_calls' or 'code_file'")
        unknown = set(data) - {"text", "tool_calls", "code_file", "usage"}
        if unknown:
            raise BadInput(f"{path}:{lineno}: unknown key(s) {sorted(unknown)}")
        text = data.get("text", "")
        if "code_file" in data:
            code_path = path.parent / data["code_file"]
            if not code_path.is_file():
                raise BadInput(f"{path}:{lineno}: key 'code_file': {code_path} not found")
            text = f"{text}\n\n```python\n{code_path.read_text()}```\n"
        calls = [ToolCall(id=f"replay-{lineno}-{i}", name=c["name"], arguments=c.get("arguments", {}))
                 for i, c in enumerate(data.get("tool_calls", []))]
        turns.append(ModelResponse(text=text, tool_calls=calls, usage=Usage(**data.get("usage", {}))))
    if not turns:
        raise BadInput(f"{path}: transcript has no turns")
    return turns
