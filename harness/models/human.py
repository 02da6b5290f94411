"""A person as the model: everything a model gets is printed, and the answer comes back on stdin.

Spec string: `human`. What is printed: the system prompt and the tool list (when they first appear and when
they change), each prompt, each tool's answer, and after every iteration its verdict. What you may answer:

- the path of a kernel file, or the code pasted and ended with a line holding only `EOF` (or Ctrl-D);
- `!tool NAME {json}`: call a tool, e.g. `!tool search_context {"query": "make_tensor_descriptor"}`; its
  answer is printed and you answer again;
- `!note TEXT` before the kernel: your notes for the iteration (the next prompts show them back);
- an empty line: end the run (it stays resumable).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from harness.models.base import Message, ModelResponse, ToolCall, ToolSpec, TranscriptExhausted

PROMPT = ("\n>>> kernel file path, or paste the code and end with a line 'EOF'; '!tool NAME {json}' calls a tool; "
          "'!note TEXT' adds a note; empty answer: stop\n")


class HumanModel:
    def __init__(self, rest: str = "", *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.name = "human"
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self._conversation: list[Message] | None = None
        self._shown = 0
        self._system = ""
        self._tools = ""
        self._calls = 0

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        self._show(messages, tools)
        notes: list[str] = []
        while True:
            self.stdout.write(PROMPT)
            self.stdout.flush()
            first = self.stdin.readline()
            if not first.strip():
                raise TranscriptExhausted("the person at the keyboard gave no kernel")
            line = first.strip()
            if line.startswith("!note"):
                notes.append(line[len("!note"):].strip())
                continue
            if line.startswith("!tool"):
                call = self._tool_call(line, tools)
                if call is None:
                    continue
                return ModelResponse(text="\n".join(notes), tool_calls=[call])
            return self._kernel(first, notes)

    def verdict(self, iteration: int, verdict: Any) -> None:
        """Told by the loop after each iteration: its verdict, rung by rung."""
        self.stdout.write(f"\n----- verdict of iteration {iteration}: {verdict.summary} -----\n")
        for r in verdict.rungs:
            self.stdout.write(f"{r.status:>4} {r.name:<12} {r.message}\n")
        self.stdout.flush()

    # ---- what is printed -------------------------------------------------------------------------------
    def _show(self, messages: list[Message], tools: list[ToolSpec]) -> None:
        if messages is not self._conversation:
            self._conversation, self._shown = messages, 0
        listing = tool_listing(tools)
        for m in messages[self._shown:]:
            if m.role == "system":
                if m.content == self._system:
                    self.stdout.write("\n----- system (the same as before) -----\n")
                else:
                    self._system = m.content
                    self.stdout.write(f"\n----- system -----\n{m.content}\n")
            elif m.role != "assistant":  # not your own answer
                self._tool_list(listing)
                head = f"tool result ({m.tool_call_id})" if m.role == "tool" else m.role
                self.stdout.write(f"\n----- {head} -----\n{m.content}\n")
        self._tool_list(listing)
        self._shown = len(messages)  # the next call's list adds our reply (not shown) and the tools' answers
        self.stdout.flush()

    def _tool_list(self, listing: str) -> None:
        """The tools offered, after the system prompt, when they first appear or change."""
        if listing != self._tools:
            self._tools = listing
            self.stdout.write(f"\n----- tools (call one with !tool NAME {{json}}) -----\n{listing}\n")

    def _tool_call(self, line: str, tools: list[ToolSpec]) -> ToolCall | None:
        name, _, raw = line[len("!tool"):].strip().partition(" ")
        known = [t.name for t in tools]
        if name not in known:
            self.stdout.write(f"unknown tool {name!r}; tools: {', '.join(known)}\n")
            return None
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            self.stdout.write(f"the arguments are not JSON ({exc.msg}): !tool {name} {{\"key\": \"value\"}}\n")
            return None
        if not isinstance(arguments, dict):
            self.stdout.write("the arguments must be a JSON object\n")
            return None
        self._calls += 1
        return ToolCall(id=f"human-{self._calls}", name=name, arguments=arguments)

    def _kernel(self, first: str, notes: list[str]) -> ModelResponse:
        path = Path(first.strip()).expanduser()
        if path.suffix == ".py" and path.is_file():
            code, label = path.read_text(), f"kernel from {path}"
        else:
            lines = [first]
            for line in self.stdin:
                if line.strip() == "EOF":
                    break
                lines.append(line)
            code, label = "".join(lines), "pasted kernel"
        text = "\n".join(notes) or label
        return ModelResponse(text=f"{text}\n\n```python\n{code.rstrip()}\n```\n")


def tool_listing(tools: list[ToolSpec]) -> str:
    """The tools as a model is offered them: name, description, JSON schema of the arguments."""
    return "\n".join(f"- {t.name}: {t.description}\n  arguments: {json.dumps(t.parameters)}" for t in tools)
