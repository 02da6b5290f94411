"""Resume, revert and fork a run from its journal alone (events.jsonl), after a stop, a crash or `kill -9`.

What a resumed loop needs is folded out of the journal in one pass (`journal_state`): the finished
iterations are kept, the iteration in flight (prompted but never finished) is redone under the same
number, a stateful model (replay) is fast-forwarded past the turns of finished iterations, hints not yet
answered go into the next prompt, and the budgets go on from what was spent (iterations, tokens, dollars,
wall time).
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.errors import BadInput
from rungs.sandbox.leftovers import remove_tree
from harness.events import (IterationFinished, ModelReplied, PromptSent, RunResumed, RunStarted, RunStopped,
                            Steered)
from harness.models.base import Usage
from rungs.core.spec import Budgets, TaskSpec, load_callable
from harness.search import parse_strategy
from harness.store import EMPTY_SHA, RunInfo, RunStore, iter_dumps, new_run_id

if TYPE_CHECKING:
    from harness.agent import Agent, AgentConfig
    from harness.executors import Executor
    from harness.models.base import Model
    from harness.tools import Toolbox
    from rungs.sandbox.pool import WorkerPool



@dataclass
class JournalState:
    """What the journal says about where a run stands."""

    last_iteration: int = 0
    """The highest finished iteration (the loop's iteration counter)."""
    in_flight: int | None = None
    """An iteration that was prompted but never finished: it is redone on resume."""
    skip_turns: int = 0
    """Model turns that finished iterations consumed (a replayed transcript skips that many)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens and dollars of every model call, including those of an iteration in flight (they were paid for)."""
    hints: list[str] = field(default_factory=list)
    """Hints the model has not yet answered in a finished iteration."""
    base_iteration: int | None = None
    """The iteration whose kernel the next one improves on (the latest with a kernel, or a revert's choice)."""
    spent_seconds: float = 0.0
    """Wall time of the loop's sessions so far (steering between sessions does not count)."""
    stopped: RunStopped | None = None
    last_round: int = 0
    """Rounds finished (what the iteration budget counts); a journal from before rounds: one per iteration."""
    revert_pending: bool = False
    """A revert after the last finished candidate: the next round improves on it whatever the strategy."""


def journal_state(events: list[Any]) -> JournalState:
    state = JournalState()
    hints: list[str] = []  # every hint journaled, in order; state.hints is the tail not yet answered
    answered = 0  # how many of them a finished candidate's prompt carried
    sent: dict[int, int] = {}  # candidate -> len(hints) when its prompt went out
    replies: dict[int, int] = {}  # candidate -> its model turns (a round's candidates finish together)
    session_start: float | None = None
    last_time: float | None = None
    for e in events:
        if isinstance(e, (RunStarted, RunResumed)):
            if session_start is not None and last_time is not None:
                state.spent_seconds += max(0.0, last_time - session_start)
            session_start = last_time = e.time
            continue
        if not isinstance(e, Steered):  # `harness steer` between sessions must not count as loop time
            last_time = e.time
        if isinstance(e, PromptSent):
            sent[e.iteration], replies[e.iteration] = len(hints), 0
            if state.in_flight is None or state.in_flight <= state.last_iteration:
                state.in_flight = e.iteration  # the first candidate of a round not yet journaled
        elif isinstance(e, ModelReplied):
            replies[e.iteration] = replies.get(e.iteration, 0) + 1
            state.usage = state.usage + e.usage
        elif isinstance(e, IterationFinished):
            if e.source == "model":
                state.skip_turns += replies.pop(e.iteration, 0)
                answered = max(answered, sent.pop(e.iteration, 0))
            state.last_iteration = max(state.last_iteration, e.iteration)
            state.last_round = max(state.last_round, e.round if e.round is not None else state.last_round + 1)
            state.revert_pending = False
            if e.kernel_sha != EMPTY_SHA:
                state.base_iteration = e.iteration
        elif isinstance(e, Steered):
            if e.action == "hint" and e.text:
                hints.append(e.text)
            elif e.action == "revert" and e.iteration is not None:
                state.base_iteration, state.revert_pending = e.iteration, True
        elif isinstance(e, RunStopped):
            state.stopped = e
    if session_start is not None and last_time is not None:
        state.spent_seconds += max(0.0, last_time - session_start)
    if state.in_flight is not None and state.in_flight <= state.last_iteration:
        state.in_flight = None
    state.hints = hints[answered:]
    return state


def task_of(info: RunInfo) -> TaskSpec:
    """The task as the run saw it (run.json's snapshot), resolved against the task file's folder."""
    task = TaskSpec.model_validate(info.task)
    task.path = Path(info.task_path)
    for key in ("reference", "inputs"):
        load_callable(task, getattr(task, key), key)
    return task


def check_iteration(store: RunStore, k: int) -> None:
    finished = {e.iteration for e in store.iterations()}
    if k not in finished:
        have = ", ".join(str(n) for n in sorted(finished)) or "none"
        raise BadInput(f"{store.root}: no finished iteration {k} (finished: {have})")
    if store.kernel_of(k) == "":
        raise BadInput(f"{store.root}: iteration {k} has no kernel (the model submitted none)")


def refuse_if_running(store: RunStore, live_ok: bool = False) -> None:
    """Refuse to touch a run another live process is running; `live_ok`: unless that process reads steering from
    the journal as it goes (`harness mcp`)."""
    pid = store.running_pid()
    if pid is not None and not (live_ok and store.info().live_steering):
        raise BadInput(f"{store.root}: the run is in progress (pid {pid}); steer it from its terminal "
                       f"(harness run --interactive) or stop it first")


def nothing_to_play(llm: "Model", state: JournalState, store: RunStore) -> str | None:
    """Why resuming `store` with `llm` would get no answer at all (a replay transcript whose every turn the run's
    finished iterations played), with what to do instead; None: it has turns left, or is no replay."""
    turns_left = getattr(llm, "turns_left", None)
    if not callable(turns_left) or turns_left(after=state.skip_turns) > 0:
        return None
    kept = f", {len(state.hints)} pending hint(s) kept" if state.hints else ""
    return (f"{store.root}: the replay transcript {getattr(llm, 'path', llm.name)} has no more answers (it holds "
            f"{turns_left()} turns, the run's finished iterations took {state.skip_turns}): nothing resumed{kept}; "
            f"go on with another model: harness resume {store.root} --model SPEC")


def played_out(store: RunStore) -> bool:
    """The run's own model is a replay transcript whose every turn was played (`harness steer` says to resume with
    --model); False where that cannot be told (another model, a transcript no longer there)."""
    from harness.models import load_model
    from rungs.core.errors import HarnessError

    spec = store.info().model
    if not spec.startswith("replay:"):
        return False
    try:
        llm = load_model(spec)
    except HarnessError:
        return False
    return nothing_to_play(llm, journal_state(store.journal.read()), store) is not None


def revert(store: RunStore, k: int) -> None:
    """The next iteration improves on iteration k's kernel."""
    check_iteration(store, k)
    store.journal.append(Steered(action="revert", iteration=k, text=f"the next iteration improves on iteration {k}"))


def resume_agent(store: RunStore, model: str | None = None, budgets: dict[str, Any] | None = None,
                 dumps_root: Path | None = None, from_iteration: int | None = None,
                 llm: "Model | None" = None, parallel: int = 1, executor: "Executor | None" = None,
                 gpu_pools: "list[WorkerPool] | None" = None, config: "AgentConfig | None" = None,
                 tools: "Toolbox | None" = None) -> "Agent":
    """An Agent that goes on with `store` where its journal stops; `budgets` overrides (and is saved). `llm`: a
    model already built (the MCP bridge), recorded under the spec `model`; `config` and `tools`: MCP's (the run's
    candidates and `parallel` are set on the config here)."""
    from harness.agent import Agent, AgentConfig
    from harness.models import load_model

    refuse_if_running(store)
    info = store.info()
    task = task_of(info)
    spec = model or info.model
    llm = llm or load_model(spec)  # before any change to the run: a model that cannot be built leaves it as it was
    why = nothing_to_play(llm, journal_state(store.journal.read()), store)
    if why:  # nor one with no answer left: the run would stop at once, its hints spent on a prompt nobody reads
        raise BadInput(why)
    merged = Budgets.model_validate(info.budgets).overridden(budgets)
    placed = [{"index": p.index, "name": p.name} for p in gpu_pools or []]
    if merged.model_dump() != info.budgets or (placed and placed != info.gpus):
        info.budgets = merged.model_dump()
        info.gpus = placed or info.gpus
        store.write_info(info)
    if from_iteration is not None:
        revert(store, from_iteration)
    dumps = dumps_root or Path(info.dumps_dir or "dumps")
    state = journal_state(store.journal.read())
    # a half-written iteration (in flight at a crash) is redone under the same number: clear what it left
    for d in store.root.glob("iter-*"):
        if d.is_dir() and d.name[5:].isdigit() and int(d.name[5:]) > state.last_iteration:
            remove_tree(d)  # rm walks a folder a candidate may have shaped without Python's recursion
            remove_tree(dumps / store.id / d.name)
    skip = getattr(llm, "skip", None)  # stateless API models have nothing to fast-forward
    if callable(skip) and state.skip_turns:
        skip(state.skip_turns)
    store.journal.append(RunResumed(next_iteration=state.last_iteration + 1, redone=state.in_flight,
                                    skipped_turns=state.skip_turns if callable(skip) else 0,
                                    spent_seconds=round(state.spent_seconds, 3), model=spec))
    if spec != info.model:
        info = store.info()
        info.model = spec
        store.write_info(info)
    config = (config or AgentConfig()).model_copy(update={"candidates": info.candidates, "parallel": parallel,
                                                               "profile": info.profile})
    return Agent(task=task, model=llm, store=store, budgets=merged, dumps_root=dumps, config=config,
                 iteration=state.last_iteration, round=state.last_round, usage=state.usage, hints=list(state.hints),
                 started=time.monotonic() - state.spent_seconds, base=state.base_iteration,
                 reverted=state.revert_pending, strategy=parse_strategy(info.strategy),
                 **({"executor": executor} if executor is not None else {}),
                 **({"tools": tools} if tools is not None else {}), gpu_pools=list(gpu_pools or []))


def fork(store: RunStore, k: int, runs_dir: Path | None = None, dumps_root: Path | None = None) -> RunStore:
    """A new run folder holding this run's iterations 1..k (journal, files, dumps); run.json's parent is 'RUN@K'."""
    check_iteration(store, k)
    info = store.info()
    raw = store.journal.path.read_text().splitlines()
    end = None
    for i, line in enumerate(raw):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if data.get("type") == "iteration" and data.get("iteration") == k:
            end = i
    assert end is not None  # check_iteration found it
    kept = []
    for line in raw[:end + 1]:
        try:
            if json.loads(line).get("type") != "run_stopped":
                kept.append(line)
        except json.JSONDecodeError:
            continue
    parent = f"{store.id}@{k}"
    new_id = new_run_id(str(info.task.get("name", "run")))
    root = (runs_dir or store.root.parent) / new_id
    root.mkdir(parents=True)
    child = RunStore(root)
    child.write_info(info.model_copy(update={"id": new_id, "parent": parent, "status": "stopped", "pid": None,
                                             "stop_reason": f"forked from {parent}; resume to go on",
                                             "created": time.time()}))
    (root / "events.jsonl").write_text("\n".join(kept) + "\n")
    child.journal.append(Steered(action="fork", iteration=k, text=f"forked from {parent}"))
    dumps = dumps_root or (Path(info.dumps_dir) if info.dumps_dir else None)
    for n in range(1, k + 1):
        # links copied as links (a link left in a kept work folder must not pull in the host file it points at)
        if store.iter_dir(n).is_dir():
            shutil.copytree(store.iter_dir(n), child.iter_dir(n), symlinks=True, ignore=shutil.ignore_patterns(".work"))
        if dumps is not None and iter_dumps(dumps, store.id, n).is_dir():
            shutil.copytree(iter_dumps(dumps, store.id, n), iter_dumps(dumps, new_id, n), symlinks=True)
    child.update_best()
    from harness.report import write_report

    write_report(child)
    return child


__all__ = ["JournalState", "journal_state", "nothing_to_play", "played_out", "resume_agent", "fork", "revert", "task_of", "refuse_if_running",
           "check_iteration"]
