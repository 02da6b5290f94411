"""The run journal: typed, versioned events appended to runs/<id>/events.jsonl as they happen.

The journal is the source of truth: reports are rebuilt from it and a stopped or crashed run is resumed
from it. Each line is one event; a torn last line (a crash mid-write) is skipped on reading.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter

from harness.models.base import Message, Usage
from rungs.core.result import Verdict

SCHEMA_VERSION = 1


class _Event(BaseModel):
    v: int = SCHEMA_VERSION
    time: float = Field(default_factory=time.time)


class RunStarted(_Event):
    type: Literal["run_started"] = "run_started"
    task: str
    model: str
    budgets: dict[str, Any]


class PromptSent(_Event):
    type: Literal["prompt"] = "prompt"
    iteration: int
    messages: list[Message]
    round: int | None = None
    """The loop iteration this candidate's prompt belongs to (several candidates per round: harness/search.py)."""
    parent: int | None = None
    """The candidate whose kernel this prompt asks to improve on (None: the task alone)."""


class ModelReplied(_Event):
    type: Literal["model_reply"] = "model_reply"
    iteration: int
    message: Message
    usage: Usage


class ToolCalled(_Event):
    type: Literal["tool_call"] = "tool_call"
    iteration: int
    name: str
    arguments: dict[str, Any]
    result: str


class IterationFinished(_Event):
    type: Literal["iteration"] = "iteration"
    iteration: int
    source: Literal["model", "user"] = "model"
    """Who wrote this kernel: the model, or a person through a hand edit."""
    kernel_sha: str
    verdict: Verdict
    notes: str = ""
    round: int | None = None
    """The loop iteration (round) this candidate was written in; None in journals from before several candidates
    per round (then the round is the iteration, and the parent is the kernel the loop last improved on)."""
    parent: int | None = None
    """When `round` is set: the candidate this one improved on (None: written from the task alone)."""
    duplicate_of: int | None = None
    """The earlier candidate with the same source: this one was not climbed and carries that one's verdict."""
    regressed: bool = False
    """It ranks below its parent (harness/search.py rank); the next round builds on the best instead."""


class Steered(_Event):
    type: Literal["steer"] = "steer"
    action: Literal["hint", "revert", "edit", "stop", "fork"]
    text: str = ""
    iteration: int | None = None


class RunResumed(_Event):
    type: Literal["run_resumed"] = "run_resumed"
    next_iteration: int
    """The iteration the resumed loop starts with (an iteration in flight at the stop is redone)."""
    redone: int | None = None
    """The iteration that was in flight when the run stopped or crashed, if any."""
    skipped_turns: int = 0
    """Model turns of finished iterations that a stateful model (replay) fast-forwarded past."""
    spent_seconds: float = 0.0
    """Wall time the run had spent before, carried into the wall-time budget."""
    model: str = ""


class RunStopped(_Event):
    type: Literal["run_stopped"] = "run_stopped"
    reason: str
    status: Literal["target_reached", "budget", "stopped", "error", "transcript_end"]


Event = Annotated[Union[RunStarted, PromptSent, ModelReplied, ToolCalled, IterationFinished, Steered, RunResumed,
                        RunStopped],
                  Field(discriminator="type")]
_adapter: TypeAdapter[Event] = TypeAdapter(Event)


class Journal:
    """Appends events to a JSONL file, one fsync'd line each, and reads them back."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, event: _Event) -> None:
        self.append_many([event])

    def append_many(self, events: list[_Event]) -> None:
        """All in one write: a round's candidates are journaled together, so a kill leaves all or none of them."""
        text = "".join(e.model_dump_json() + "\n" for e in events)
        with open(self.path, "a") as f:
            f.write(text)
            f.flush()

    def read(self) -> list[Any]:
        if not self.path.is_file():
            return []
        events = []
        for raw in self.path.read_text().splitlines():
            if not raw.strip():
                continue
            try:
                events.append(_adapter.validate_python(json.loads(raw)))
            except (json.JSONDecodeError, ValueError):
                continue  # a torn line from a crash mid-write
        return events
