"""Prompt templates (jinja2, StrictUndefined: a missing variable is an error, not an empty string).

`render_system(task, tools)` is the system prompt (role, machine, rules, tools and when to use them) and ends
with `render_task(task)`, the task's contract (reference source, inputs, tolerances, shapes, floor times): the
same text every iteration, so it is sent once (a person sees it once; an API caches it as the prompt's prefix)
instead of once per iteration prompt. `render_iteration(...)` is the prompt of one iteration: only what changed
(the history, the last result, the best and last kernels, hints). What goes in is decided in harness/feedback.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from harness import feedback
from rungs.ladder import dot_precision

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
_env.filters["shape"] = feedback.shape_label
_env.filters["reason"] = feedback.reason
_env.filters["notes"] = feedback.notes_line
_env.filters["num"] = feedback.fmt

def render(name: str, **values: Any) -> str:
    return _env.get_template(name).render(**values)


def render_task(task: Any, env: feedback.Environment | None = None) -> str:
    """The task part of the prompt: what to compute, the reference's and the input maker's source, the input
    layout and seed policy, the tolerances, the shapes and each bench shape's floor time."""
    env = env or feedback.environment(task.dsl)
    reference_source = feedback.source_of(task, task.reference, "reference")
    return render("task.j2", task=task, env=env, reference_source=reference_source,
                  inputs_source=feedback.source_of(task, task.inputs, "inputs"),
                  layout=feedback.input_layout(task), tolerances=feedback.tolerances(task),
                  precision_note=dot_precision.contract_note(task, reference_source), floors=feedback.floors(task, env.gpu))


def render_system(task: Any, tools: list[Any] | None = None, env: feedback.Environment | None = None) -> str:
    """The system prompt; `tools` are the ToolSpecs offered (each listed with when to use it)."""
    from harness.tools import use_when

    env = env or feedback.environment(task.dsl)
    listed = [{"name": t.name, "use": use_when(t)} for t in (tools or [])]
    return render("system.j2", task=task, env=env, tools=listed, version_notes=feedback.version_notes(env),
                  class_entry=feedback.class_entry(task), task_text=render_task(task, env))


def render_iteration(**values: Any) -> str:
    """The iteration prompt, kept within `budget.prompt_chars` characters so that it fits the model's window as
    iterations pile up: past the limit, rung details shrink, then older history rows fold into one summary
    row, then details and the best kernel (when it is not the last) go; a prompt still too long is cut in the
    middle. The last kernel and its result always stay.

    Keywords: task, history, last, last_code, best, best_code, base_code, hints, iteration, budget; optional candidate
    and env (feedback.Environment, read from this machine when left out)."""
    limit = values["budget"].prompt_chars
    values.setdefault("candidate", (1, 1))  # (this one, of how many this round): harness/search.py
    values["best_rule"] = feedback.best_rule(values.get("best"))
    values["matrix_advice"] = dot_precision.matrix_advice(values["task"])  # within what the tolerance allows
    history = values["history"]
    task = values["task"]
    env = values.pop("env", None) or feedback.environment(task.dsl)
    steps: list[dict[str, Any]] = [{}, {"details_chars": 2000}, {"details_chars": 2000, "history_rows": 10},
                                   {"details_chars": 0, "history_rows": 10}, {"details_chars": 0, "history_rows": 3},
                                   {"details_chars": 0, "history_rows": 3, "show_best": False}]
    text = ""
    for step in steps:
        extra = dict(step)
        rows = extra.get("history_rows")
        if rows is not None and len(history) > rows:
            extra["history_note"] = _history_summary(history[:-rows])
        extra.update(_last_view(values, extra.get("details_chars", 6000), extra.get("show_best", True)))
        text = render("iteration.j2", **values, **extra, env=env)
        if len(text) <= limit:
            return text
    cut = len(text) - limit + 200
    middle = len(text) // 2
    return (text[:middle - cut // 2] + f"\n\n[... {cut} characters left out to fit the prompt budget ...]\n\n"
            + text[middle + cut - cut // 2:])


def _last_view(values: dict[str, Any], details_chars: int, show_best: bool) -> dict[str, Any]:
    last, best = values.get("last"), values.get("best")
    last_code, best_code = values.get("last_code"), values.get("best_code")
    view = feedback.rung_view(values["task"], last.verdict, details_chars) if last else {}
    diff, same = None, False
    if show_best and last and best and best_code and last_code and best.iteration != last.iteration:
        # Always a diff, a rewrite too (its diff is about as long as the two kernels whole): the best is above.
        diff = feedback.kernel_diff(best_code, last_code, f"iter-{best.iteration}/kernel.py",
                                    f"iter-{last.iteration}/kernel.py") or None
        same = diff is None  # resubmitted unchanged: nothing to show twice
    return {"view": view, "last_diff": diff, "last_same": same}


def _history_summary(older: list[Any]) -> str:
    passed = sum(1 for it in older if it.verdict.verdict == "pass")
    failed: dict[str, int] = {}
    for it in older:
        if it.verdict.failed_rung:
            failed[it.verdict.failed_rung] = failed.get(it.verdict.failed_rung, 0) + 1
    where = ", ".join(f"{rung} {n}" for rung, n in failed.items())
    return (f"{older[0].iteration}-{older[-1].iteration} | | {passed} pass, {len(older) - passed} fail (rows folded "
            f"to fit){': ' + where if where else ''} | |")
