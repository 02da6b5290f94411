"""The agent loop: prompt -> model turn (tools) -> kernel -> ladder -> feedback, until a stop.

Stopping is an exception that carries its reason; `run()` is `while True: step()` around it.
"""
from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from harness.events import IterationFinished, ModelReplied, PromptSent, RunStarted, RunStopped, Steered, ToolCalled
from harness.models.base import Message, Model, ModelError, ToolCall, ToolSpec, TranscriptExhausted, Usage
from harness.prompts import render_iteration, render_system
from harness.report import iteration_seconds
from rungs.core.spec import Budgets, TaskSpec
from harness.store import EMPTY_SHA, RunStore, best_of, kernel_sha
from harness.executors import ClimbContext, Executor, Local, Told
from harness.search import Draft, Latest, Strategy, duplicates, ranked, regressed
from harness.tools import ToolContext, Toolbox, on_gpu
from rungs.sandbox.pool import WorkerPool, default_pool, job_readable, keep_warm
from rungs.ladder.benchmark import bench_entries
from rungs.worker.job import Job
from rungs.ladder.ladder import cuda_available
from rungs.core.result import RungResult, Verdict

MAX_TOOL_TURNS = 12
"""Model calls within one iteration before it must have submitted a kernel."""

INTERRUPTED = "interrupted by the user (Ctrl-C); resumable"
"""The reason of a run stopped by Ctrl-C (status `stopped`): the CLI exits 130 on it (README, Exit codes)."""


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
    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        """A climb ended (`seconds`: the ladder's); duplicates and replies with no kernel never climb."""
    def note(self, text: str) -> None: ...
    # optional: climb_started(n) (a view that labels rungs by candidate), and iteration_recorded(event, seconds):
    # every candidate as journaled, duplicates and replies with no kernel included, with the seconds report.md shows


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


NO_KERNEL = Verdict(verdict="fail", failed_rung="precheck", rungs=[RungResult(
    name="precheck", status="fail",
    message="the reply held no kernel: submit it with submit_kernel or in a ```python fenced block")])


class AgentConfig(BaseModel):
    """The loop's knobs: how many candidates a round asks for, where they climb, how long a model may talk."""

    model_config = ConfigDict(extra="forbid")

    candidates: int = 1
    """Kernels the model is asked for each round (the strategy picks each one's parent)."""
    parallel: int = 1
    """Worker pools climbing side by side: on a CPU, this many; on GPUs, this many per GPU (their timings take
    turns through the GPU's timing lock, rungs/timing/gpu_lock.py)."""
    max_tool_turns: int | None = MAX_TOOL_TURNS
    """Model turns within one iteration before it must have submitted; None: no limit (an MCP client's turns are
    its own, bounded by the wall-time budget)."""
    profile: Literal["all", "improving"] = "all"
    """Which timed candidates Nsight Compute profiles and witnesses: all, or only those faster than the run's best so
    far (a search's default: the profile holds the GPU alone for 10-20 s a candidate; rungs/ladder/profile.py)."""
    ladder_options: dict[str, Any] = {}
    """More Ladder fields for every climb (tests of the sandbox turn the static screen off with them)."""


BetweenRounds = Callable[["Agent"], None]
"""Called after each round (steering: harness/interactive.py, harness/mcp_server.py); may add hints, revert, record
a user's iteration, move the run to a fork (Agent.move_to), or raise UserStopped."""


@dataclass
class Agent:
    """The loop. Built with its parts (model, store, tools, executor, strategy, config) and the state a resumed run
    goes on from; nobody rewires it afterwards: `run(observer, between)` says who watches and steers."""

    task: TaskSpec
    model: Model
    store: RunStore
    budgets: Budgets
    config: AgentConfig = field(default_factory=AgentConfig)
    dumps_root: Path = Path("dumps")
    strategy: Strategy = field(default_factory=Latest)
    executor: Executor = field(default_factory=Local)
    """Where a round's climbs run (harness/executors.py): in this process, or as Ray tasks."""
    gpu_pools: list[WorkerPool] = field(default_factory=list)
    """One pool per GPU (`--gpus`; harness/executors.gpu_pools): a round's candidates climb side by side, one per
    GPU at a time. Empty: the device's default pool (and `parallel` CPU pools)."""
    tools: Toolbox = field(default_factory=Toolbox)
    """The model's tools (MCP hands in one that puts live steering on top of each result)."""
    # ---- where the run stands (harness/resume.py passes a resumed run's) ----
    iteration: int = 0
    """The last candidate's number (iter-NNN); with one candidate per round, the last iteration."""
    round: int = 0
    """Rounds done: what the iteration budget counts (each asks the model for `candidates` kernels)."""
    usage: Usage = field(default_factory=Usage)
    hints: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    base: int | None = None
    """The candidate the next round improves on under `latest` (the last with a kernel, or a revert's choice)."""
    reverted: bool = False
    """A revert chose `base`: the next round improves on it whatever the strategy."""

    def __post_init__(self) -> None:
        self._told = Told(QuietObserver())  # who hears the run: run()'s observer, one call at a time
        self._between: BetweenRounds | None = None
        self._pools: list[WorkerPool | None] = []
        self._prompted: dict[int, float] = {}
        """When each candidate's prompt was journaled (its seconds, as report.md counts them, start there)."""

    @property
    def base_kernel(self) -> str | None:
        return self.store.kernel_of(self.base) if self.base else None

    def revert_to(self, k: int) -> None:
        self.base, self.reverted = k, True

    def move_to(self, store: RunStore, k: int, round: int) -> None:
        """Go on in another run folder (a fork holding iterations 1..k, `round` rounds), improving on k."""
        self.store, self.iteration, self.round = store, k, round
        self.revert_to(k)

    # ---- the loop -----------------------------------------------------------------------------------
    def run(self, observer: Observer | None = None, between: BetweenRounds | None = None) -> RunStopped:
        """Rounds until a stop; `observer` hears the run as it goes, `between` steers after each round."""
        self._told, self._between = Told(observer or QuietObserver()), between
        self.begin()
        try:
            while True:
                self.step()
        except StopRun as stop:
            event = RunStopped(reason=stop.reason, status=stop.status)
        except KeyboardInterrupt:
            event = RunStopped(reason=INTERRUPTED, status="stopped")
        self.end(event)
        return event

    def step(self) -> None:
        self.check_budgets()
        self.play_round()
        if self._between is not None:
            self._between(self)

    def begin(self) -> None:
        keep_warm(True)  # the next candidate's worker starts up while the model writes it
        if not self.store.journal.read():
            self.store.journal.append(RunStarted(task=str(self.task.path), model=self.model.name,
                                                 budgets=self.budgets.model_dump()))
        self.store.mark_running(self.dumps_root)

    def end(self, event: RunStopped) -> None:
        from harness.report import write_report

        self.store.journal.append(event)
        self.store.set_status(event.status, event.reason)
        self.store.update_best()
        write_report(self.store)

    def check_budgets(self) -> None:
        if self.round >= self.budgets.iterations:
            raise BudgetExceeded(f"iteration budget spent ({self.budgets.iterations} iterations)")
        self.check_spending(wall_time=True)

    def check_spending(self, wall_time: bool) -> None:
        """Wall time (between iterations, and on each submission over MCP), tokens and dollars (also before every
        model call within an iteration)."""
        b = self.budgets
        minutes = (time.monotonic() - self.started) / 60
        if wall_time and minutes >= b.minutes:
            raise BudgetExceeded(f"wall-time budget spent ({minutes:.1f} of {b.minutes:g} minutes)")
        if wall_time and b.gpu_seconds is not None and (held := self.gpu_seconds()) >= b.gpu_seconds:
            raise BudgetExceeded(f"GPU-seconds budget spent ({held:.1f} of {b.gpu_seconds:g} GPU seconds, summed "
                                 "over the GPUs)")
        if b.tokens is not None and self.usage.input_tokens + self.usage.output_tokens >= b.tokens:
            raise BudgetExceeded(f"token budget spent ({self.usage.input_tokens + self.usage.output_tokens} "
                                 f"of {b.tokens} tokens)")
        if b.usd is not None and self.usage.cost_usd >= b.usd:
            raise BudgetExceeded(f"dollar budget spent (${self.usage.cost_usd:.2f} of ${b.usd:.2f})")

    def gpu_seconds(self) -> float:
        """GPU seconds spent: the time each climbed candidate held its GPU, summed over the GPUs, from the journal
        (so a resumed run goes on from what was spent; a duplicate, never climbed, holds none)."""
        return sum(e.verdict.gpu.seconds for e in self.store.iterations()
                   if e.verdict.gpu is not None and e.duplicate_of is None)

    def play_round(self) -> None:
        """One round: the strategy picks each candidate's parent, the model writes them, they climb and are
        journaled together. A stop mid-round (a budget, the transcript's end) still climbs what was written."""
        self.round += 1
        self.warm_round()
        parents = [self.base] * self.config.candidates if self.reverted else \
            self.strategy.parents(self.store.iterations(), self.base, self.config.candidates)
        drafts: list[Draft] = []
        stop: StopRun | None = None
        try:
            for i, parent in enumerate(parents):
                drafts.append(self.draft(parent, (i + 1, len(parents))))
        except StopRun as exc:
            stop = exc
        if drafts:
            self.hints.clear()  # a hint is for the next round's prompts only; it stays in the journal
            self.finish_round(drafts)
        else:
            self.round -= 1
        if stop is not None:
            raise stop

    def draft(self, parent: int | None, candidate: tuple[int, int]) -> Draft:
        self.iteration += 1
        n = self.iteration
        self._told("iteration_started", n)
        messages = [Message(role="system", content=render_system(self.task, self.tool_specs())),
                    Message(role="user", content=self.prompt(parent, candidate))]
        prompt = PromptSent(iteration=n, messages=messages, round=self.round, parent=parent)
        self.store.journal.append(prompt)
        self._prompted[n] = prompt.time
        try:
            code, notes = self.converse(n, messages)
        except StopRun:
            self.iteration -= 1  # nothing was submitted under this number
            raise
        return Draft(node=n, parent=parent, code=code, notes=notes)

    def converse(self, n: int, messages: list[Message]) -> tuple[str | None, str]:
        """Model turns (answering its tool calls) until it submits a kernel; returns (code, notes)."""
        for _ in range(self.config.max_tool_turns) if self.config.max_tool_turns is not None else itertools.count():
            self.check_spending(wall_time=False)
            try:
                response = self.model.respond(messages, self.tool_specs())
            except TranscriptExhausted as exc:
                raise TranscriptEnded(str(exc)) from None
            except ModelError as exc:
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
                result = self.tools.call(call, self.tool_context())
                self.store.journal.append(ToolCalled(iteration=n, name=call.name, arguments=call.arguments,
                                                     result=result[:20000]))
                messages.append(Message(role="tool", content=result, tool_call_id=call.id))
        return None, f"no kernel after {self.config.max_tool_turns} model turns"

    def finish_round(self, drafts: list[Draft]) -> None:
        """Save the kernels, climb each distinct one once (side by side on the pools), journal the round."""
        tree = {e.iteration: e for e in self.store.iterations()}
        for d in drafts:
            self.store.save_kernel(d.node, d.code or "", self.store.kernel_of(d.parent) if d.parent else None)
        same = duplicates(drafts, tree.values())
        todo = [d for d in drafts if d.code and d.node not in same]
        verdicts = dict(zip((d.node for d in todo), self.executor.climb(todo, self.climb_context()) if todo else []))
        for d in drafts:
            if not d.code:
                verdicts[d.node] = NO_KERNEL
            elif d.node in same:
                verdicts[d.node] = verdicts.get(same[d.node]) or tree[same[d.node]].verdict
        self.commit([(d, verdicts[d.node]) for d in drafts], same)

    def climb_context(self) -> ClimbContext:
        options = dict(self.config.ladder_options)
        best = self.store.best() if self.config.profile == "improving" else None
        bar = best.verdict.metric("runtime_us") if best is not None else None
        if bar is not None:  # the round's candidates are profiled only where they beat the best before the round
            options["profile_under_us"] = bar
        return ClimbContext(task=self.task, store=self.store, dumps_root=self.dumps_root, tell=self._told,
                            pools=self.pools(), ladder_options=options)

    def tool_context(self) -> ToolContext:
        return ToolContext(task=self.task, store=self.store, dumps_root=self.dumps_root,
                           note=lambda text: self._told("note", text))

    def tool_specs(self) -> list[ToolSpec]:
        return self.tools.specs(on_gpu(self.task.dsl, remote=self.executor.name != "local"))

    def warm_round(self) -> None:
        """Start the workers of the round's candidates while the model writes them: a GPU climbs its share of a round
        one after another, each needing a started worker (the last climb's warm_next started one). Not on a CPU,
        whose few cores the model's wait does not leave idle, nor for Ray, whose workers are its own."""
        if self.config.candidates <= 1 or self.executor.name != "local" or not cuda_available():
            return
        pools = [p if p is not None else default_pool("cuda") for p in self.pools()]
        # what a climb's job will show its worker (rungs/ladder/compile: the bench entries' input maker's folder)
        first = (self.task.dsl, job_readable(Job(bench=bench_entries(self.task))))
        for pool in pools:
            pool.warm_round(-(-self.config.candidates // len(pools)), first)

    def pools(self) -> list[WorkerPool | None]:
        """The GPUs' pools (one climb each at a time); else one pool (the device's default) unless --parallel asks
        for CPU pools side by side."""
        if self.gpu_pools:
            return list(self.gpu_pools)
        if self.config.parallel <= 1 or cuda_available():
            return [None]
        if not self._pools:
            self._pools = [WorkerPool("cpu") for _ in range(self.config.parallel)]
        return self._pools

    def commit(self, results: list[tuple[Draft, Verdict]], same: dict[int, int] | None = None) -> None:
        """Journal a round's candidates in one write (a kill leaves all or none); raise TargetReached when one is."""
        tree = {e.iteration: e for e in self.store.iterations()}
        events = []
        for d, verdict in results:
            if not self.store.iter_dir(d.node).is_dir():
                self.store.save_kernel(d.node, d.code or "", self.base_kernel)
            self.store.save_result(d.node, verdict)
            parent = tree.get(d.parent) if d.parent else None
            events.append(IterationFinished(
                iteration=d.node, round=self.round, parent=d.parent, kernel_sha=kernel_sha(d.code or ""),
                verdict=verdict, notes=d.notes[:4000], source=d.source, duplicate_of=(same or {}).get(d.node),
                regressed=bool(d.code and parent is not None and regressed(verdict, parent.verdict))))
            if d.code:
                self.base = d.node
        self.store.journal.append_many(events)
        self.reverted = False
        for e in events:  # a view of every candidate (optional: the observer may not have it)
            prompted = self._prompted.pop(e.iteration, None) if e.source == "model" else None
            self._told("iteration_recorded", e, iteration_seconds(e, prompted))
        self.store.update_best()
        tell = getattr(self.model, "verdict", None)  # a model that wants to hear it (the human provider prints it)
        for e in events:
            if callable(tell):
                tell(e.iteration, e.verdict)
        reached = [e for e in events if e.verdict.verdict == "pass" and e.verdict.metric("target_reached")]
        if reached:
            e = ranked(reached)[0]
            raise TargetReached(f"iteration {e.iteration} reached {e.verdict.metric('roofline_fraction'):.0%} of the "
                                f"roofline (target {self.task.roofline.target:.0%})")

    def check_and_record(self, n: int, code: str, notes: str, source: str) -> None:
        """A kernel written outside the model (a person's edit) as candidate `n`, a round of its own, improving on
        `base`."""
        self.iteration = n
        self.round += 1
        self.finish_round([Draft(node=n, parent=self.base, code=code, notes=notes, source=source)])

    def record(self, n: int, code: str, verdict: Verdict, notes: str, source: str) -> None:
        """A verdict reached elsewhere, journaled as a round of its own (tests build run folders with it)."""
        self.round += 1
        self.commit([(Draft(node=n, parent=self.base, code=code, notes=notes, source=source), verdict)])

    # ---- prompts and steering -------------------------------------------------------------------------
    def prompt(self, parent: int | None = None, candidate: tuple[int, int] = (1, 1)) -> str:
        history = self.store.iterations()
        if not self.strategy.linear and not self.reverted:  # a tree: the prompt continues the parent's line
            return iteration_prompt(self.task, self.store, lineage(history, parent), self.round, self.budgets,
                                    base_code=self.store.kernel_of(parent) if parent else None, hints=self.hints,
                                    candidate=candidate)
        return iteration_prompt(self.task, self.store, history, self.round, self.budgets,
                                base_code=self.base_kernel, hints=self.hints, candidate=candidate)

    def add_hint(self, text: str) -> None:
        self.hints.append(text)
        self.store.journal.append(Steered(action="hint", text=text))


def lineage(history: list[Any], node: int | None) -> list[Any]:
    """The candidates from the root down to `node` (its ancestors, then it): a tree prompt's history."""
    by_id = {e.iteration: e for e in history}
    line = []
    while node is not None and node in by_id:
        line.append(by_id[node])
        node = by_id[node].parent
    return line[::-1]


def iteration_prompt(task: TaskSpec, store: RunStore, history: list[Any], iteration: int, budgets: Budgets,
                     base_code: str | None = None, hints: list[str] | None = None,
                     candidate: tuple[int, int] = (1, 1)) -> str:
    """The prompt of `iteration` after `history` (the run's finished iterations, or the first k of them to
    rebuild an old prompt: benchmarks/prompt_sizes.py)."""
    best = best_of(history)  # the journal is read once per prompt
    last = history[-1] if history else None
    return render_iteration(task=task, history=history, last=last,
                            last_code=store.kernel_of(last.iteration) if last and last.kernel_sha != EMPTY_SHA else None,
                            best=best, best_code=store.kernel_of(best.iteration) if best else None,
                            base_code=base_code, hints=list(hints or []), iteration=iteration, budget=budgets,
                            candidate=candidate)


__all__ = ["iteration_prompt", "lineage", "Agent", "AgentConfig", "StopRun", "TargetReached", "BudgetExceeded", "UserStopped", "TranscriptEnded", "ModelFailed",
           "extract_code", "ToolCall"]
