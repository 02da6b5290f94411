"""Replays a transcript: a JSONL file of assistant turns, played in order whatever the prompt says.

Each line is one turn, `{"text": "...", "tool_calls": [{"name": ..., "arguments": {...}}], "code_file":
"demos/x.py", "usage": {...}}` (all keys optional), or one round of several candidates,
`{"candidates": [TURN, [TURN, TURN], ...]}`: each item is one candidate's turn, or its turns when it calls tools
before submitting. A round's candidates are played one after another, as if they were consecutive lines, so a
transcript plays the same under any `--candidates`; `--candidates` equal to the rounds' width makes each line one
iteration (`rounds` lists the widths; the CLI warns when they differ). `code_file` (relative to the transcript) is
appended to the text as a fenced python block, so demo kernels stay real files that can be read, linted and
checked on their own.
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
        self.turns, self.rounds = load_rounds(self.path)
        self.position = 0

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        if self.position >= len(self.turns):
            raise TranscriptExhausted(f"transcript {self.path} has no more turns ({len(self.turns)} played)")
        turn = self.turns[self.position]
        self.position += 1
        return turn.model_copy(deep=True)

    def turns_left(self, after: int = 0) -> int:
        """Turns not yet played once `after` more are skipped (a resumed run's finished iterations played them)."""
        return max(0, len(self.turns) - self.position - after)

    def skip(self, n: int) -> None:
        """Fast-forward past `n` turns already played (a resumed run's finished iterations)."""
        self.position = min(self.position + n, len(self.turns))


TURN_KEYS = {"text", "tool_calls", "code_file", "usage"}


def load_rounds(path: Path) -> tuple[list[ModelResponse], list[int]]:
    """(every turn in play order, the number of candidates of each line)."""
    if not path.is_file():
        raise BadInput(f"{path}: transcript not found")
    turns: list[ModelResponse] = []
    widths = []
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
        if isinstance(data, dict) and "candidates" in data:
            if set(data) != {"candidates"} or not isinstance(data["candidates"], list) or not data["candidates"]:
                raise BadInput(f"{path}:{lineno}: a round is {{\"candidates\": [turn, ...]}} with at least one "
                               f"candidate and no other key")
            items, single = data["candidates"], False
        else:
            items, single = [data], True
        for i, item in enumerate(items):
            for j, one in enumerate(item if isinstance(item, list) else [item]):
                turns.append(_turn(path, lineno, one, str(lineno) if single else f"{lineno}-{i}-{j}"))
        widths.append(len(items))
    if not turns:
        raise BadInput(f"{path}: transcript has no turns")
    return turns, widths


def _turn(path: Path, lineno: int, data: object, tag: str) -> ModelResponse:
    if not isinstance(data, dict):
        raise BadInput(f"{path}:{lineno}: expected an object with 'text', 'tool_calls' or 'code_file'")
    unknown = set(data) - TURN_KEYS
    if unknown:
        raise BadInput(f"{path}:{lineno}: unknown key(s) {sorted(unknown)}")
    text = data.get("text", "")
    if "code_file" in data:
        code_path = path.parent / data["code_file"]
        if not code_path.is_file():
            raise BadInput(f"{path}:{lineno}: key 'code_file': {code_path} not found")
        text = f"{text}\n\n```python\n{code_path.read_text()}```\n"
    calls = [ToolCall(id=f"replay-{tag}-{k}", name=c["name"], arguments=c.get("arguments", {}))
             for k, c in enumerate(data.get("tool_calls", []))]
    return ModelResponse(text=text, tool_calls=calls, usage=Usage(**data.get("usage", {})))
