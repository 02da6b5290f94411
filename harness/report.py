"""report.md and report.html, rebuilt from the journal (never the reverse): `harness report RUN`.

`run_view` folds events.jsonl into what both reports show: one row per finished iteration (who wrote it,
the kernel it improved on, its verdict and metrics, tokens and dollars, wall time), the steering, the
sessions (start, resumes, stops). report.html is built in harness/report_html.py.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.events import IterationFinished, ModelReplied, PromptSent, RunResumed, RunStarted, RunStopped, Steered
from harness.store import EMPTY_SHA, RunInfo, RunStore, best_of, iter_dumps



@dataclass
class IterRow:
    """One finished iteration as the reports show it."""

    event: IterationFinished
    base: int | None
    """The iteration whose kernel this one was diffed against (the previous one, or a revert's choice)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    wall_s: float | None = None
    """From the prompt to the verdict (model and ladder); for a user's edit, the ladder alone."""
    added: int = 0
    removed: int = 0

    @property
    def n(self) -> int:
        return self.event.iteration

    @property
    def round(self) -> int:
        return self.event.round if self.event.round is not None else self.event.iteration

    def metric(self, name: str) -> Any:
        return self.event.verdict.metric(name)

    @property
    def message(self) -> str:
        v = self.event.verdict
        failed = v.rung(v.failed_rung) if v.failed_rung else None
        return failed.message if failed else ""


@dataclass
class RunView:
    store: RunStore
    info: RunInfo
    rows: list[IterRow] = field(default_factory=list)
    steering: list[Steered] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)
    """RunStarted, RunResumed and RunStopped events, in order."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    best: IterationFinished | None = None
    status: str = ""
    climbing_s: float = 0.0
    """Wall seconds from each start or resume to that session's last journaled verdict, summed: model calls
    included, the time between sessions not."""
    first_round_s: float | None = None
    """Of climbing_s: from the run's start to its first round's last verdict, where the first session saw a later
    round begin (a task's one-off costs, its reference timings and caches filled, fall in that round)."""

    @property
    def stopped(self) -> RunStopped | None:
        return next((e for e in reversed(self.sessions) if isinstance(e, RunStopped)), None)

    @property
    def best_row(self) -> IterRow | None:
        return next((r for r in self.rows if self.best and r.n == self.best.iteration), None)

    @property
    def is_tree(self) -> bool:
        """Several candidates per round, or a strategy other than one line of iterations."""
        return self.info.candidates > 1 or self.info.strategy != "latest"

    def children(self) -> dict[int | None, list[IterRow]]:
        """The tree: parent -> its candidates in order (None: written from the task alone)."""
        kids: dict[int | None, list[IterRow]] = {}
        for r in self.rows:
            kids.setdefault(r.base, []).append(r)
        return kids

    @property
    def any_runtime(self) -> bool:
        return any(r.metric("runtime_us") is not None for r in self.rows)


def diff_stat(patch: str) -> tuple[int, int]:
    lines = patch.splitlines()
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return added, removed


def run_view(store: RunStore) -> RunView:
    events = store.journal.read()
    view = RunView(store=store, info=store.info(), status=store.display_status(),
                   best=best_of([e for e in events if isinstance(e, IterationFinished)]))
    base: int | None = None
    prompt_time: dict[int, float] = {}
    per_iter: dict[int, list[ModelReplied]] = {}
    started = verdict = None  # this session's start and its latest verdict
    first_round: int | None = None  # the first session's first round, while its candidates are still arriving
    for e in events:
        if isinstance(e, (RunStarted, RunResumed)):
            view.climbing_s += verdict - started if verdict is not None else 0.0
            started, verdict = e.time, None
            if isinstance(e, RunResumed):
                first_round = None  # a round still open at a stop: no first-round split
        elif isinstance(e, IterationFinished) and started is not None:
            if e.round is not None and view.first_round_s is None and not view.rows:
                first_round = e.round
            elif first_round is not None and e.round != first_round and view.first_round_s is None:
                view.first_round_s = verdict - started if verdict is not None else None
                first_round = None
            verdict = e.time
        if isinstance(e, (RunStarted, RunResumed, RunStopped)):
            view.sessions.append(e)
        elif isinstance(e, PromptSent):
            prompt_time[e.iteration] = e.time
        elif isinstance(e, ModelReplied):
            per_iter.setdefault(e.iteration, []).append(e)
            view.tokens_in += e.usage.input_tokens
            view.tokens_out += e.usage.output_tokens
            view.cost_usd += e.usage.cost_usd
        elif isinstance(e, Steered):
            view.steering.append(e)
            if e.action == "revert" and e.iteration is not None:
                base = e.iteration
        elif isinstance(e, IterationFinished):
            replies = per_iter.pop(e.iteration, []) if e.source == "model" else []
            row = IterRow(event=e, base=e.parent if e.round is not None else base, tokens_in=sum(r.usage.input_tokens for r in replies),
                          tokens_out=sum(r.usage.output_tokens for r in replies),
                          cost_usd=sum(r.usage.cost_usd for r in replies))
            row.wall_s = iteration_seconds(e, prompt_time.pop(e.iteration, None) if e.source == "model" else None)
            patch = store.iter_dir(e.iteration) / "diff.patch"
            if patch.is_file():
                row.added, row.removed = diff_stat(patch.read_text())
            view.rows.append(row)
            if e.kernel_sha != EMPTY_SHA:
                base = e.iteration
    view.climbing_s += verdict - started if verdict is not None else 0.0
    return view


def iteration_seconds(e: IterationFinished, prompted: float | None) -> float:
    """A candidate's seconds as the reports and the live views show them: from its prompt to its journaled verdict
    (its model turns and its round's climbs: a round's candidates are journaled together, so a duplicate or a reply
    with no kernel counts the round's time too); with no prompt of its own (a user's edit), its ladder's time."""
    return e.time - prompted if prompted is not None else sum(r.seconds for r in e.verdict.rungs)


def fmt(value: Any, spec: str, empty: str = "") -> str:
    return format(value, spec) if isinstance(value, (int, float)) and not isinstance(value, bool) else empty


def speedup(row: IterRow) -> Any:
    return row.metric("speedup_vs_eager")


def dump_dir_of(view: RunView, n: int) -> Path | None:
    """Where iteration n's compiler dumps are, if they still exist."""
    row = next((r for r in view.rows if r.n == n), None)
    candidates = []
    if row is not None and isinstance(row.metric("dump_dir"), str):
        candidates.append(Path(row.metric("dump_dir")))
    if view.info.dumps_dir:
        candidates.append(iter_dumps(view.info.dumps_dir, view.store.id, n))
    return next((c for c in candidates if c.is_dir()), None)


def linked_paths(row: IterRow) -> list[tuple[str, Path]]:
    """Files and folders the rungs named in their metrics (profiles, traces), other than the dumps folder."""
    found = []
    for r in row.event.verdict.rungs:
        for key, value in r.metrics.items():
            if key != "dump_dir" and isinstance(value, str) and ("/" in value or os.sep in value):
                path = Path(value)
                if path.exists():
                    found.append((f"{r.name}: {key}", path))
    return found


def rel(view: RunView, path: Path) -> str:
    return os.path.relpath(path.resolve(), view.store.root.resolve())


def _md_cell(text: str, limit: int = 160) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:limit]


def walk_tree(view: RunView) -> list[tuple[IterRow, int]]:
    """Every row once, depth first from the roots, with its depth (a parent missing from the run: a root)."""
    kids = view.children()
    known = {r.n for r in view.rows}
    roots = [r for r in view.rows if r.base is None or r.base not in known]
    out: list[tuple[IterRow, int]] = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        r, depth = stack.pop()
        out.append((r, depth))
        stack += [(c, depth + 1) for c in reversed(kids.get(r.n, [])) if c.base in known]
    return out


def tree_label(r: IterRow, view: RunView) -> str:
    """`iteration 7 (round 2): fail at compile, regressed`: one node of the search tree in words."""
    e = r.event
    marks = [f"same kernel as {e.duplicate_of}: not climbed" if e.duplicate_of else "",
             "regressed from its parent" if e.regressed else "", "best" if view.best and view.best.iteration == r.n
             else "", "by the user" if e.source == "user" else ""]
    verdict = e.verdict.verdict if e.verdict.verdict != "fail" else f"fail at {e.verdict.failed_rung}"
    runtime = r.metric("runtime_us")
    gpu = e.verdict.gpu if not e.duplicate_of else None
    return (f"iteration {r.n} (round {r.round}): {verdict}" + (f", {runtime:.1f} us" if runtime is not None else "")
            + (f" on GPU {gpu.index}" if gpu is not None else "") + "".join(f"; {m}" for m in marks if m))


def gpu_line(view: RunView) -> str | None:
    """`- GPUs: 0 (NVIDIA H200): 3 candidates, 1 (NVIDIA H200): 3 candidates; 412.0 GPU seconds`, or None."""
    held = [r.event.verdict.gpu for r in view.rows if r.event.verdict.gpu is not None and not r.event.duplicate_of]
    listed = {int(g["index"]): str(g.get("name", "")) for g in view.info.gpus}
    for g in held:
        listed.setdefault(g.index, g.name)
    if not listed:
        return None
    counts = {i: sum(1 for g in held if g.index == i) for i in listed}
    return ("- GPUs: " + ", ".join(f"{i} ({n or 'unnamed'}): {counts[i]} climbed" for i, n in sorted(listed.items()))
            + f"; {sum(g.seconds for g in held):.1f} GPU seconds")


def pace_line(view: RunView) -> str | None:
    """`- pace: 8 candidates climbed in 159.8 s of wall time, 180 per hour (model calls included)`: the rate a search
    runs at (issue 36: candidates judged per GPU-hour), or None before a verdict. A duplicate, a reply with no kernel
    and a user's edit are not counted (the time of the last two is)."""
    climbed = len(climbed_rows(view))
    if not climbed or view.climbing_s <= 0:
        return None
    line = (f"- pace: {climbed} candidate{'s' if climbed > 1 else ''} climbed in {view.climbing_s:.1f} s of wall time, "
            f"{3600 * climbed / view.climbing_s:.0f} per hour (model calls included)")
    if (later := later_pace(view)) is not None:
        n, seconds = later
        line += (f"; after the first round (the task's reference timings and caches filled there): {n} in "
                 f"{seconds:.1f} s, {3600 * n / seconds:.0f} per hour")
    return line


def climbed_rows(view: RunView) -> list[IterRow]:
    """The candidates a run climbed: a duplicate, a reply with no kernel and a user's edit are not counted."""
    return [r for r in view.rows if not r.event.duplicate_of and r.event.source == "model"
            and r.event.kernel_sha != EMPTY_SHA]


def later_pace(view: RunView) -> tuple[int, float] | None:
    """(candidates climbed after the first round, wall seconds they took), or None: the rate a long search settles
    at once a task's one-off costs are paid (issue 36: tree searches spend about 300 attempts on a problem)."""
    if view.first_round_s is None:
        return None
    first = view.rows[0].event.round
    n = sum(1 for r in climbed_rows(view) if r.event.round != first)
    seconds = view.climbing_s - view.first_round_s
    return (n, seconds) if n and seconds > 0 else None


def build_markdown(view: RunView) -> str:
    info = view.info
    stopped = view.stopped
    best_row = view.best_row
    by_user = sum(1 for r in view.rows if r.event.source == "user")
    lines = [f"# Run {view.store.id}", "",
             f"- task: `{info.task.get('name')}` ({info.task_path})",
             f"- model: `{info.model}`",
             f"- status: **{view.status}**" + (f": {stopped.reason}" if stopped and view.status != "running" else ""),
             f"- iterations: {len(view.rows)}" + (f" ({by_user} edited by the user)" if by_user else "")
             + f"; tokens in/out: {view.tokens_in}/{view.tokens_out}; cost: ${view.cost_usd:.4f}"]
    if info.parent:
        lines.append(f"- forked from `{info.parent}` (run@iteration)")
    if (gpus := gpu_line(view)) is not None:
        lines.append(gpus)
    if (pace := pace_line(view)) is not None:
        lines.append(pace)
    if best_row:
        runtime, fraction = best_row.metric("runtime_us"), best_row.metric("roofline_fraction")
        lines.append(f"- best: iteration {best_row.n}" + (f", {runtime:.1f} us" if runtime is not None else "")
                     + (f", {fraction:.1%} of the roofline" if fraction is not None else "") + " (`best/kernel.py`)")
    else:
        lines.append("- best: no passing kernel yet")
    if not view.any_runtime and view.rows:
        lines.append("- no runtimes: the benchmark rung did not run (no GPU), so only verdicts are compared")
    lines += ["", "| iter | by | from | verdict | failed rung | message | s | runtime_us | GB/s | TFLOP/s | speedup "
                  "| roofline | tokens | diff |",
              "|---:|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in view.rows:
        v = r.event.verdict
        lines.append(f"| {r.n} | {r.event.source} | {r.base or ''} | {v.verdict} | {v.failed_rung or ''} | "
                     f"{_md_cell(r.message)} | {fmt(r.wall_s, '.1f')} | {fmt(r.metric('runtime_us'), '.1f')} | "
                     f"{fmt(r.metric('gbps'), '.0f')} | {fmt(r.metric('tflops'), '.1f')} | {fmt(speedup(r), '.2f')} | "
                     f"{fmt(r.metric('roofline_fraction'), '.1%')} | {r.tokens_in + r.tokens_out or ''} | "
                     f"+{r.added} -{r.removed} |")
    if view.is_tree:
        lines += ["", f"## Search tree ({info.strategy}, {info.candidates} candidates per iteration)", ""]
        lines += [f"{'  ' * depth}- {tree_label(r, view)}" for r, depth in walk_tree(view)]
    if view.steering:
        lines += ["", "## Steering", ""] + [f"- {e.action}" + (f" (iteration {e.iteration})" if e.iteration else "")
                                            + (f": {e.text}" if e.text else "") for e in view.steering]
    if len(view.sessions) > 2 or any(isinstance(e, RunResumed) for e in view.sessions):
        lines += ["", "## Sessions", ""]
        for e in view.sessions:
            if isinstance(e, RunStarted):
                lines.append("- started")
            elif isinstance(e, RunResumed):
                lines.append(f"- resumed at iteration {e.next_iteration}"
                             + (f" (iteration {e.redone} was in flight: redone)" if e.redone else "")
                             + f", {e.spent_seconds:.0f} s spent before")
            else:
                lines.append(f"- stopped ({e.status}): {e.reason}")
    for r in view.rows:
        e = r.event
        lines += ["", f"## Iteration {e.iteration}: {e.verdict.summary}", ""]
        origin = "edited by the user" if e.source == "user" else "written by the model"
        lines.append(f"{origin}" + (f", from iteration {r.base}'s kernel" if r.base else "")
                     + f"; diff +{r.added} -{r.removed}" + (f"; {r.wall_s:.1f} s" if r.wall_s is not None else "")
                     + (f"; climbed on GPU {g.index} ({g.name}), held {g.seconds:.1f} s"
                        if (g := e.verdict.gpu) is not None and not e.duplicate_of else ""))
        lines.append("")
        if e.notes:
            lines += ["> " + ln for ln in e.notes.strip().split("```")[0].strip().splitlines()[:6]] + [""]
        lines += [f"- {x.name}: {x.status}" + (f": {x.message}" if x.message else "") for x in e.verdict.rungs]
        for x in e.verdict.rungs:
            if x.details and x.status != "skip":
                lines += ["", f"<details><summary>{x.name} details</summary>", "", "```", x.details.strip(), "```",
                          "", "</details>"]
        d = f"iter-{e.iteration:03d}"
        files = [f"[kernel.py]({d}/kernel.py)", f"[diff.patch]({d}/diff.patch)", f"[result.json]({d}/result.json)"]
        dumps = dump_dir_of(view, e.iteration)
        if dumps is not None:
            files.append(f"[dumps]({rel(view, dumps)})")
        files += [f"[{label}]({rel(view, path)})" for label, path in linked_paths(r)]
        lines += ["", "Files: " + ", ".join(files)]
    return "\n".join(lines) + "\n"


def write_report(store: RunStore) -> tuple[Path, Path]:
    """Write report.md and report.html into the run folder; returns their paths."""
    from harness.report_html import build_html

    view = run_view(store)  # reads the journal once for both pages
    md, page = store.root / "report.md", store.root / "report.html"
    md.write_text(build_markdown(view))
    page.write_text(build_html(view))
    return md, page
