"""The agent loop: prompt -> model turn (tools) -> kernel -> ladder -> feedback, until a stop.

Stopping is an exception that carries its reason; `run()` is `while True: step()` around it.
"""
from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from harness.events import IterationFinished, ModelReplied, PromptSent, RunStarted, RunStopped, Steered, ToolCalled
from harness.models.base import Message, Model, ModelError, ToolCall, TranscriptExhausted, Usage
from harness.prompts import render_iteration, render_system
from rungs.core.spec import Budgets, TaskSpec
from harness.store import EMPTY_SHA, RunStore, best_of, iter_dumps, kernel_sha
from harness.tools import Toolbox
from rungs import sandbox
from rungs.ladder import Ladder
from rungs.core.result import RungResult, Verdict

MAX_TOOL_TURNS = 12
"""Model calls within one iteration before it must have submitted a kernel."""


class StopRun(Exception):
    status = "stopped"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TargetReached(StopRun):
    status = "target_reached"


class BudgetExceeded(StopRun):
    status = "budget"


class UserStopped(StopRun):
    status = "stopped"


class TranscriptEnded(StopRun):
    status = "transcript_end"


class ModelFailed(StopRun):
    status = "error"


class Observer(Protocol):
    """What the live view (or a test) is told as the run goes."""

    def iteration_started(self, n: int) -> None: ...
    def rung_started(self, name: str) -> None: ...
    def rung_finished(self, result: RungResult) -> None: ...
    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None: ...
    def note(self, text: str) -> None: ...


class QuietObserver:
    def iteration_started(self, n: int) -> None: ...
    def rung_started(self, name: str) -> None: ...
    def rung_finished(self, result: RungResult) -> None: ...
    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None: ...
    def note(self, text: str) -> None: ...


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The last fenced code block of a reply (models without tools submit that way)."""
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else None


@dataclass
class Agent:
    task: TaskSpec
    model: Model
    store: RunStore
    budgets: Budgets
    observer: Observer = field(default_factory=QuietObserver)
    dumps_root: Path = Path("dumps")
    iteration: int = 0
    usage: Usage = field(default_factory=Usage)
    hints: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    base_kernel: str | None = None
    """The kernel the next iteration improves on (the latest, or the one a revert chose)."""
    between_iterations: Callable[["Agent"], None] | None = None
    """Called after each iteration (steering: harness/interactive.py); may add hints, set base_kernel,
    record a user's iteration, move the run to a fork (self.store), or raise UserStopped."""
    ladder_options: dict[str, Any] = field(default_factory=dict)
    """More Ladder fields for every climb (tests of the sandbox turn the static screen off with them)."""
    max_tool_turns: int | None = MAX_TOOL_TURNS
    """Model turns within one iteration before it must have submitted; None: no limit (an MCP client's turns are
    its own, bounded by the wall-time budget)."""

    def __post_init__(self) -> None:
        self.tools = Toolbox(self)

    # ---- the loop -----------------------------------------------------------------------------------
    def run(self) -> RunStopped:
        sandbox.keep_warm(True)  # the next candidate's worker starts up while the model writes it
        if not self.store.journal.read():
            self.store.journal.append(RunStarted(task=str(self.task.path), model=self.model.name,
                                                 budgets=self.budgets.model_dump()))
        self.store.mark_running(self.dumps_root)
        try:
            while True:
                self.check_budgets()
                self.step()
                if self.between_iterations:
                    self.between_iterations(self)
        except StopRun as stop:
            event = RunStopped(reason=stop.reason, status=stop.status)
        except KeyboardInterrupt:
            event = RunStopped(reason="interrupted by the user (Ctrl-C); resumable", status="stopped")
        self.store.journal.append(event)
        self.store.set_status(event.status, event.reason)
        self.store.update_best()
        from harness.report import write_report

        write_report(self.store)
        return event

    def check_budgets(self) -> None:
        if self.iteration >= self.budgets.iterations:
            raise BudgetExceeded(f"iteration budget spent ({self.budgets.iterations} iterations)")
        self.check_spending(wall_time=True)

    def check_spending(self, wall_time: bool) -> None:
        """Wall time (between iterations, and on each submission over MCP), tokens and dollars (also before every
        model call within an iteration)."""
        b = self.budgets
        minutes = (time.monotonic() - self.started) / 60
        if wall_time and minutes >= b.minutes:
            raise BudgetExceeded(f"wall-time budget spent ({minutes:.1f} of {b.minutes:g} minutes)")
        if b.tokens is not None and self.usage.input_tokens + self.usage.output_tokens >= b.tokens:
            raise BudgetExceeded(f"token budget spent ({self.usage.input_tokens + self.usage.output_tokens} "
                                 f"of {b.tokens} tokens)")
        if b.usd is not None and self.usage.cost_usd >= b.usd:
            raise BudgetExceeded(f"dollar budget spent (${self.usage.cost_usd:.2f} of ${b.usd:.2f})")

    def step(self) -> None:
        self.iteration += 1
        n = self.iteration
        self.observer.iteration_started(n)
        messages = [Message(role="system", content=render_system(self.task, self.tools.specs())),
                    Message(role="user", content=self.prompt())]
        self.store.journal.append(PromptSent(iteration=n, messages=messages))
        code, notes = self.converse(n, messages)
        self.hints.clear()  # a hint is for the next prompt only; it stays in the journal
        if code is None:
            verdict = Verdict(verdict="fail", failed_rung="precheck", rungs=[RungResult(
                name="precheck", status="fail",
                message="the reply held no kernel: submit it with submit_kernel or in a ```python fenced block")])
            self.record(n, "", verdict, notes, source="model")
            return
        self.check_and_record(n, code, notes, source="model")

    def converse(self, n: int, messages: list[Message]) -> tuple[str | None, str]:
        """Model turns (answering its tool calls) until it submits a kernel; returns (code, notes)."""
        for _ in range(self.max_tool_turns) if self.max_tool_turns is not None else itertools.count():
            self.check_spending(wall_time=False)
            try:
                response = self.model.respond(messages, self.tools.specs())
            except TranscriptExhausted as exc:
                self.iteration -= 1  # nothing was submitted in this iteration
                raise TranscriptEnded(str(exc)) from None
            except ModelError as exc:
                self.iteration -= 1
                raise ModelFailed(f"model {self.model.name} failed: {exc}") from None
            self.usage = self.usage + response.usage
            reply = Message(role="assistant", content=response.text, tool_calls=response.tool_calls)
            messages.append(reply)
            self.store.journal.append(ModelReplied(iteration=n, message=reply, usage=response.usage))
            if not response.tool_calls:
                return extract_code(response.text), response.text
            for call in response.tool_calls:
                if call.name == "submit_kernel":
                    return str(call.arguments.get("code", "")), str(call.arguments.get("notes", response.text))
                result = self.tools.call(call)
                self.store.journal.append(ToolCalled(iteration=n, name=call.name, arguments=call.arguments,
                                                     result=result[:20000]))
                messages.append(Message(role="tool", content=result, tool_call_id=call.id))
        return None, f"no kernel after {self.max_tool_turns} model turns"

    def check_and_record(self, n: int, code: str, notes: str, source: str) -> Verdict:
        """Save the kernel, climb the ladder, journal the result; raise TargetReached when it is."""
        previous = self.base_kernel
        path = self.store.save_kernel(n, code, previous)
        t0 = time.monotonic()
        prev_dumps = iter_dumps(self.dumps_root, self.store.id, n - 1)
        verdict = Ladder(task=self.task, kernel=path, work_dir=self.store.iter_dir(n) / ".work",
                         dump_dir=iter_dumps(self.dumps_root, self.store.id, n),
                         previous_dump_dir=prev_dumps if prev_dumps.is_dir() else None,
                         baseline_cache=self.store.root / "baselines",  # eager and torch.compile timed once a run
                         on_rung=self.observer.rung_started, on_result=self.observer.rung_finished,
                         **self.ladder_options).climb()
        self.observer.iteration_finished(n, verdict, time.monotonic() - t0)
        self.record(n, code, verdict, notes, source)
        if verdict.verdict == "pass" and verdict.metric("target_reached"):
            raise TargetReached(f"iteration {n} reached {verdict.metric('roofline_fraction'):.0%} of the roofline "
                                f"(target {self.task.roofline.target:.0%})")
        return verdict

    def record(self, n: int, code: str, verdict: Verdict, notes: str, source: str) -> None:
        if not self.store.iter_dir(n).is_dir():
            self.store.save_kernel(n, code, self.base_kernel)
        self.store.save_result(n, verdict)
        self.store.journal.append(IterationFinished(iteration=n, kernel_sha=kernel_sha(code), verdict=verdict,
                                                    notes=notes[:4000], source=source))
        if code:
            self.base_kernel = code
        self.store.update_best()
        tell = getattr(self.model, "verdict", None)  # a model that wants to hear it (the human provider prints it)
        if callable(tell):
            tell(n, verdict)

    # ---- prompts and steering -------------------------------------------------------------------------
    def prompt(self) -> str:
        return iteration_prompt(self.task, self.store, self.store.iterations(), self.iteration, self.budgets,
                                base_code=self.base_kernel, hints=self.hints)

    def add_hint(self, text: str) -> None:
        self.hints.append(text)
        self.store.journal.append(Steered(action="hint", text=text))


def iteration_prompt(task: TaskSpec, store: RunStore, history: list[Any], iteration: int, budgets: Budgets,
                     base_code: str | None = None, hints: list[str] | None = None) -> str:
    """The prompt of `iteration` after `history` (the run's finished iterations, or the first k of them to
    rebuild an old prompt: benchmarks/prompt_sizes.py)."""
    best = best_of(history)  # the journal is read once per prompt
    last = history[-1] if history else None
    return render_iteration(task=task, history=history, last=last,
                            last_code=store.kernel_of(last.iteration) if last and last.kernel_sha != EMPTY_SHA else None,
                            best=best, best_code=store.kernel_of(best.iteration) if best else None,
                            base_code=base_code, hints=list(hints or []), iteration=iteration, budget=budgets)


__all__ = ["iteration_prompt", "Agent", "StopRun", "TargetReached", "BudgetExceeded", "UserStopped", "TranscriptEnded", "ModelFailed",
           "extract_code", "ToolCall"]
