"""Prompt templates (jinja2, StrictUndefined: a missing variable is an error, not an empty string)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(name: str, **values: Any) -> str:
    return _env.get_template(name).render(**values)


def render_iteration(**values: Any) -> str:
    """The iteration prompt, kept within `budget.prompt_chars` characters so that it fits the model's window as
    iterations pile up: past the limit, rung details shrink, then older history rows fold into one summary
    row, then details and the best kernel (when it is not the last) go; a prompt still too long is cut in the
    middle. The last kernel and its rung messages always stay."""
    limit = values["budget"].prompt_chars
    history = values["history"]
    steps: list[dict[str, Any]] = [{}, {"details_chars": 2000}, {"details_chars": 2000, "history_rows": 10},
                                   {"details_chars": 0, "history_rows": 10}, {"details_chars": 0, "history_rows": 3},
                                   {"details_chars": 0, "history_rows": 3, "show_best": False}]
    text = ""
    for step in steps:
        extra = dict(step)
        rows = extra.get("history_rows")
        if rows is not None and len(history) > rows:
            extra["history_note"] = _history_summary(history[:-rows])
        text = render("iteration.j2", **values, **extra)
        if len(text) <= limit:
            return text
    cut = len(text) - limit + 200
    middle = len(text) // 2
    return (text[:middle - cut // 2] + f"\n\n[... {cut} characters left out to fit the prompt budget ...]\n\n"
            + text[middle + cut - cut // 2:])


def _history_summary(older: list[Any]) -> str:
    passed = sum(1 for it in older if it.verdict.verdict == "pass")
    failed: dict[str, int] = {}
    for it in older:
        if it.verdict.failed_rung:
            failed[it.verdict.failed_rung] = failed.get(it.verdict.failed_rung, 0) + 1
    where = ", ".join(f"{rung} {n}" for rung, n in failed.items())
    return (f"{older[0].iteration}-{older[-1].iteration} | | {passed} pass, {len(older) - passed} fail (rows folded "
            f"to fit) | {where} | |")
