"""A person as the model: the prompt is printed, the kernel comes back on stdin.

Spec string: `human`. Answer with the path of a kernel file, or paste the code and end it with a line
holding only `EOF` (or Ctrl-D). An empty answer ends the run (it stays resumable).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from harness.models.base import Message, ModelResponse, ToolSpec, TranscriptExhausted


class HumanModel:
    def __init__(self, rest: str = "", *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.name = "human"
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def respond(self, messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        for m in messages:
            if m.role != "system":
                self.stdout.write(f"\n----- {m.role} -----\n{m.content}\n")
        self.stdout.write("\n>>> kernel file path, or paste the code and end with a line 'EOF' "
                          "(empty answer: stop)\n")
        self.stdout.flush()
        first = self.stdin.readline()
        if not first.strip():
            raise TranscriptExhausted("the person at the keyboard gave no kernel")
        path = Path(first.strip()).expanduser()
        if path.suffix == ".py" and path.is_file():
            code, note = path.read_text(), f"kernel from {path}"
        else:
            lines = [first]
            for line in self.stdin:
                if line.strip() == "EOF":
                    break
                lines.append(line)
            code, note = "".join(lines), "pasted kernel"
        return ModelResponse(text=f"{note}\n\n```python\n{code.rstrip()}\n```\n")
