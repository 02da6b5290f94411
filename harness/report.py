"""report.md, rebuilt from the journal (never the reverse)."""
from __future__ import annotations

from harness.events import IterationFinished, ModelReplied, RunStarted, RunStopped, Steered
from harness.store import RunStore


def _fmt(value: object, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else ""


def build_markdown(store: RunStore) -> str:
    events = store.journal.read()
    info = store.info()
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    stopped = [e for e in events if isinstance(e, RunStopped)]
    iters = [e for e in events if isinstance(e, IterationFinished)]
    tokens_in = sum(e.usage.input_tokens for e in events if isinstance(e, ModelReplied))
    tokens_out = sum(e.usage.output_tokens for e in events if isinstance(e, ModelReplied))
    cost = sum(e.usage.cost_usd for e in events if isinstance(e, ModelReplied))
    best = store.best()
    lines = [f"# Run {store.id}", "",
             f"- task: `{info.task.get('name')}` ({info.task_path})",
             f"- model: `{started.model if started else info.model}`",
             f"- status: **{info.status}**" + (f": {stopped[-1].reason}" if stopped else ""),
             f"- iterations: {len(iters)}; tokens in/out: {tokens_in}/{tokens_out}; cost: ${cost:.4f}",
             f"- best: iteration {best.iteration} (`best/kernel.py`)" if best else "- best: no passing kernel yet",
             "", "| iter | by | verdict | failed rung | message | runtime_us | GB/s | TFLOP/s | roofline |",
             "|---:|---|---|---|---|---:|---:|---:|---:|"]
    for e in iters:
        v = e.verdict
        failed = v.rung(v.failed_rung) if v.failed_rung else None
        msg = (failed.message if failed else "").replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| {e.iteration} | {e.source} | {v.verdict} | {v.failed_rung or ''} | {msg} | "
                     f"{_fmt(v.metric('runtime_us'), '.1f')} | {_fmt(v.metric('gbps'), '.0f')} | "
                     f"{_fmt(v.metric('tflops'), '.1f')} | {_fmt(v.metric('roofline_fraction'), '.1%')} |")
    steering = [e for e in events if isinstance(e, Steered)]
    if steering:
        lines += ["", "## Steering", ""] + [f"- {e.action}" + (f" (iteration {e.iteration})" if e.iteration else "")
                                            + (f": {e.text}" if e.text else "") for e in steering]
    for e in iters:
        lines += ["", f"## Iteration {e.iteration}: {e.verdict.summary}", ""]
        if e.notes:
            lines += ["> " + ln for ln in e.notes.strip().split("```")[0].strip().splitlines()[:6]] + [""]
        lines += [f"- {r.name}: {r.status}" + (f": {r.message}" if r.message else "") for r in e.verdict.rungs]
        lines += ["", f"Files: `iter-{e.iteration:03d}/kernel.py`, `iter-{e.iteration:03d}/diff.patch`, "
                      f"`iter-{e.iteration:03d}/result.json`"]
    return "\n".join(lines) + "\n"


def write_report(store: RunStore) -> None:
    (store.root / "report.md").write_text(build_markdown(store))
