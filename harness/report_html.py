"""report.html: one self-contained page per run (inline CSS, JS and SVG; nothing fetched from a network).

What is on it: the run's facts, a plot over iterations (runtime and roofline fraction; on a run without
timings, e.g. CPU only, each iteration's verdict, and a line saying why), the table of iterations, the
steering, and per iteration its rung results and metric tables, a side-by-side diff against the kernel it
improved on, and links to its files, dumps and profiles.
"""
from __future__ import annotations

import difflib
import html
import urllib.parse
from pathlib import Path

from typing import Callable

from harness.report import (IterRow, RunView, dump_dir_of, fmt, gpu_line, linked_paths, pace_line, rel, speedup,
                            tree_label, walk_tree)
from rungs.core.fmt import clip

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1200px; padding: 0 16px; color: #1d2330; }
h1 { font-size: 20px; margin-bottom: 4px; } h2 { font-size: 16px; margin-top: 28px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.facts dt { color: #5b6475; } dl.facts dd { margin: 0; }
table { border-collapse: collapse; } th, td { padding: 3px 8px; border-bottom: 1px solid #e3e6ec; text-align: left; }
th { background: #f4f6f9; font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
#iterations tbody tr { cursor: pointer; } #iterations tbody tr:hover { background: #f0f5ff; }
.pass { color: #13795b; font-weight: 600; } .fail { color: #b42318; font-weight: 600; }
.best { background: #ecfdf3; } .user { font-style: italic; }
details.iteration { border: 1px solid #e3e6ec; border-radius: 6px; margin: 10px 0; padding: 6px 12px; }
details.iteration > summary { cursor: pointer; font-weight: 600; }
pre { background: #f7f8fa; padding: 8px; overflow-x: auto; font-size: 12px; }
blockquote { color: #5b6475; border-left: 3px solid #d0d5dd; margin: 6px 0; padding-left: 10px; white-space: pre-wrap; }
.note { color: #5b6475; }
table.diff { font: 12px ui-monospace, monospace; border: 1px solid #e3e6ec; table-layout: fixed; width: 100%; }
table.diff td { border: 0; padding: 0 4px; white-space: pre-wrap; vertical-align: top; overflow-wrap: anywhere; }
table.diff td.diff_header { width: 3.5em; text-align: right; color: #5b6475; }
table.diff th.diff_header { width: auto; }
table.diff th { background: #eef1f5; }
.diff_add { background: #d1fadf; } .diff_chg { background: #fef0c7; } .diff_sub { background: #fee4e2; }
.diff_next { display: none; }
.scroll { overflow-x: auto; } td.nowrap { white-space: nowrap; }
svg#plot { max-width: 100%; height: auto; }
ul.tree, ul.tree ul { list-style: none; padding-left: 18px; margin: 2px 0; border-left: 1px solid #d0d5dd; }
ul.tree li { margin: 2px 0; } ul.tree li[data-verdict=pass] > a { color: #13795b; }
ul.tree li[data-verdict=fail] > a { color: #b42318; }
ul.tree li.dup { color: #5b6475; } ul.tree li.regressed > a { text-decoration: line-through; }
ul.tree li.best > a { background: #ecfdf3; font-weight: 600; }
svg text { font: 11px system-ui, sans-serif; } svg text:not([fill]) { fill: #344054; }
"""

JS = """
(function () {
  function openHash() {
    var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (el && el.tagName === 'DETAILS') { el.open = true; }
  }
  document.querySelectorAll('#iterations tbody tr').forEach(function (tr) {
    tr.addEventListener('click', function () { location.hash = 'iter-' + tr.dataset.iter; });
  });
  window.addEventListener('hashchange', openHash);
  openHash();
  document.body.dataset.ready = '1';
})();
"""

W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 280, 64, 64, 28, 54


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _href(path: str) -> str:
    return urllib.parse.quote(Path(path).as_posix())


def _x(i: int, count: int) -> float:
    span = W - LEFT - RIGHT
    return LEFT + (span / 2 if count == 1 else span * i / (count - 1))


def plot_svg(view: RunView) -> str:
    """Runtime (left axis) and roofline fraction (right axis) per iteration; verdicts alone without timings."""
    rows = view.rows
    target = (view.info.task.get("roofline") or {}).get("target")
    parts = [f'<svg id="plot" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             f'role="img" data-mode="{"runtime" if view.any_runtime else "verdicts"}">']
    if not rows:
        parts.append(f'<title>no iterations yet</title><text x="{W / 2}" y="{H / 2}" text-anchor="middle">'
                     'No finished iterations yet.</text></svg>')
        return "".join(parts)
    base_y = H - BOTTOM
    parts.append(f'<line x1="{LEFT}" y1="{base_y}" x2="{W - RIGHT}" y2="{base_y}" stroke="#98a2b3"/>')
    for i, r in enumerate(rows):
        x = _x(i, len(rows))
        parts.append(f'<text x="{x:.1f}" y="{base_y + 16}" text-anchor="middle">{r.n}</text>')
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" text-anchor="middle">iteration</text>')
    if view.any_runtime:
        parts.append("<title>runtime and roofline fraction over iterations</title>")
        runtimes = [r.metric("runtime_us") for r in rows]
        top = max(v for v in runtimes if v is not None) * 1.1 or 1.0
        fractions = [r.metric("roofline_fraction") for r in rows]
        ftop = max([1.0] + [f for f in fractions if f is not None])

        def y_rt(v: float) -> float:
            return base_y - (base_y - TOP) * v / top

        def y_fr(v: float) -> float:
            return base_y - (base_y - TOP) * v / ftop

        for k in range(5):
            v = top * k / 4
            parts.append(f'<line x1="{LEFT}" y1="{y_rt(v):.1f}" x2="{W - RIGHT}" y2="{y_rt(v):.1f}" stroke="#eaecf0"/>'
                         f'<text x="{LEFT - 6}" y="{y_rt(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>'
                         f'<text x="{W - RIGHT + 6}" y="{y_fr(ftop * k / 4) + 4:.1f}">{ftop * k / 4:.0%}</text>')
        parts.append(f'<text x="14" y="{TOP + (base_y - TOP) / 2}" transform="rotate(-90 14 {TOP + (base_y - TOP) / 2})" '
                     'text-anchor="middle" fill="#2e5aac">runtime (us)</text>'
                     f'<text x="{W - 10}" y="{TOP + (base_y - TOP) / 2}" transform="rotate(90 {W - 10} '
                     f'{TOP + (base_y - TOP) / 2})" text-anchor="middle">roofline fraction</text>')
        if isinstance(target, (int, float)):
            parts.append(f'<line x1="{LEFT}" y1="{y_fr(target):.1f}" x2="{W - RIGHT}" y2="{y_fr(target):.1f}" '
                         f'stroke="#13795b" stroke-dasharray="2 4"/><text x="{LEFT + 4}" y="{y_fr(target) - 4:.1f}" '
                         f'fill="#13795b">target {target:.0%}</text>')
        for values, y_of, colour, dash in ((runtimes, y_rt, "#2e5aac", ""), (fractions, y_fr, "#e07b00", "6 3")):
            points = [f"{_x(i, len(rows)):.1f},{y_of(v):.1f}" for i, v in enumerate(values) if v is not None]
            if len(points) > 1:
                parts.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" '
                             f'stroke-dasharray="{dash}" points="{" ".join(points)}"/>')
            for i, v in enumerate(values):
                if v is not None:
                    label = f"{v:.1f} us" if y_of is y_rt else f"{v:.1%} of the roofline"
                    parts.append(f'<a href="#iter-{rows[i].n}"><circle cx="{_x(i, len(rows)):.1f}" cy="{y_of(v):.1f}" '
                                 f'r="4" fill="{colour}"><title>iteration {rows[i].n}: {label}</title></circle></a>')
        for i, r in enumerate(rows):
            if r.event.verdict.verdict == "fail":
                x = _x(i, len(rows))
                parts.append(f'<a href="#iter-{r.n}"><text x="{x:.1f}" y="{base_y - 4}" text-anchor="middle" '
                             f'fill="#b42318" font-weight="700">×<title>iteration {r.n}: {_e(r.event.verdict.summary)}'
                             '</title></text></a>')
        parts.append(f'<text x="{LEFT}" y="14" fill="#2e5aac">● runtime (us)</text>'
                     f'<text x="{LEFT + 110}" y="14" fill="#e07b00">● roofline fraction</text>'
                     f'<text x="{LEFT + 250}" y="14" fill="#b42318">× failed</text>')
    else:
        parts.append("<title>verdict per iteration (no runtimes in this run)</title>")
        mid = TOP + (base_y - TOP) / 2
        parts.append(f'<text x="{W / 2}" y="16" text-anchor="middle" class="no-runtime">No runtimes: the benchmark '
                     'rung did not run (no GPU). Each iteration\'s verdict instead.</text>')
        for i, r in enumerate(rows):
            x = _x(i, len(rows))
            v = r.event.verdict
            tip = f"iteration {r.n} ({r.event.source}): {_e(v.summary)}"
            if v.verdict == "pass":
                mark = f'<circle cx="{x:.1f}" cy="{mid:.1f}" r="9" fill="#13795b"><title>{tip}</title></circle>'
            else:
                mark = (f'<g stroke="#b42318" stroke-width="3"><title>{tip}</title><line x1="{x - 8:.1f}" '
                        f'y1="{mid - 8:.1f}" x2="{x + 8:.1f}" y2="{mid + 8:.1f}"/><line x1="{x - 8:.1f}" '
                        f'y1="{mid + 8:.1f}" x2="{x + 8:.1f}" y2="{mid - 8:.1f}"/></g>')
            label = v.verdict if v.verdict != "fail" else (v.failed_rung or "fail")
            parts.append(f'<a href="#iter-{r.n}">{mark}</a><text x="{x:.1f}" y="{mid + 28:.1f}" '
                         f'text-anchor="middle">{_e(label)}</text>')
            if r.event.source == "user":
                parts.append(f'<text x="{x:.1f}" y="{mid - 18:.1f}" text-anchor="middle">(user)</text>')
    parts.append("</svg>")
    return "".join(parts)


MESSAGE_CHARS = 200
"""Longest failure message in the iterations table (the whole one is in the row's title and the iteration below)."""


def _num(value: object, spec: str) -> tuple[str, bool]:
    text = fmt(value, spec)
    return f'<td class="num">{text}</td>', bool(text)


def iteration_table(view: RunView) -> str:
    """The iterations, one row each. A column no row has a value for (runtime, rates and roofline on a CPU run,
    tokens and dollars on a replay) is left out rather than shown empty."""
    best = view.best.iteration if view.best else None
    columns: list[tuple[str, Callable[[IterRow], tuple[str, bool]]]] = [
        ("iter", lambda r: (f'<td class="num"><a href="#iter-{r.n}">{r.n}</a></td>', True)),
        ("round", lambda r: (f'<td class="num">{r.round}</td>', r.round != r.n)),
        ("by", lambda r: (f"<td>{_e(r.event.source)}</td>", True)),
        ("from", lambda r: (f'<td class="num">{r.base or ""}</td>', r.base is not None)),
        ("verdict", lambda r: (f'<td class="{r.event.verdict.verdict}">{r.event.verdict.verdict}</td>', True)),
        ("failed rung / message", _failure_cell),
        ("s", lambda r: _num(r.wall_s, ".1f")),
        ("runtime_us", lambda r: _num(r.metric("runtime_us"), ".1f")),
        ("GB/s", lambda r: _num(r.metric("gbps"), ".0f")),
        ("TFLOP/s", lambda r: _num(r.metric("tflops"), ".1f")),
        ("speedup", lambda r: _num(speedup(r), ".2f")),
        ("roofline", lambda r: _num(r.metric("roofline_fraction"), ".1%")),
        ("tokens", lambda r: (f'<td class="num">{r.tokens_in + r.tokens_out or ""}</td>',
                              bool(r.tokens_in + r.tokens_out))),
        ("$", lambda r: _num(r.cost_usd or None, ".4f")),
        ("diff", lambda r: (f'<td class="nowrap">+{r.added} −{r.removed}</td>', True)),
    ]
    cells = {head: [cell(r) for r in view.rows] for head, cell in columns}
    shown = [head for head, _ in columns if any(filled for _, filled in cells[head])] if view.rows else \
        [head for head, _ in columns]
    out = ['<table id="iterations"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in shown) + "</tr></thead><tbody>"]
    for i, r in enumerate(view.rows):
        classes = " ".join(c for c in ("best" if r.n == best else "", "user" if r.event.source == "user" else "") if c)
        out.append(f'<tr data-iter="{r.n}"' + (f' class="{classes}"' if classes else "") + ">"
                   + "".join(cells[h][i][0] for h in shown) + "</tr>")
    out.append("</tbody></table>")
    hidden = [head for head, _ in columns if head not in shown]
    if hidden:
        out.append(f'<p class="note">No values in this run, so not shown: {_e(", ".join(hidden))}.</p>')
    return "".join(out)


def _failure_cell(r: IterRow) -> tuple[str, bool]:
    v = r.event.verdict
    if not v.failed_rung:
        return "<td></td>", False
    text = f"{v.failed_rung}: {r.message}"
    return f'<td title="{_e(text)}">{_e(clip(text, MESSAGE_CHARS))}</td>', True


def side_by_side(view: RunView, r: IterRow) -> str:
    try:
        new = view.store.kernel_of(r.n)
    except Exception:  # a run folder with a file missing still gets a report
        return '<p class="note">kernel.py is missing.</p>'
    old = ""
    if r.base is not None and view.store.iter_dir(r.base).joinpath("kernel.py").is_file():
        old = view.store.kernel_of(r.base)
    if old == new:
        return '<p class="note">Same kernel as the one it started from.</p>'
    table = difflib.HtmlDiff(tabsize=4, wrapcolumn=72).make_table(
        old.splitlines(), new.splitlines(), f"iteration {r.base}" if r.base else "(nothing before)",
        f"iteration {r.n}", context=bool(old), numlines=3)
    return f'<div class="scroll">{table}</div>'


def rung_tables(r: IterRow) -> str:
    out = ["<table class=\"rungs\"><thead><tr><th>rung</th><th>status</th><th>s</th><th>message</th>"
           "<th>metrics</th></tr></thead><tbody>"]
    for x in r.event.verdict.rungs:
        metrics = ", ".join(f"{_e(k)}={_e(format(v, '.4g') if isinstance(v, float) else v)}"
                            for k, v in x.metrics.items() if not isinstance(v, (dict, list)))
        status_class = {"ok": "pass", "fail": "fail"}.get(x.status, "note")
        out.append(f"<tr><td>{_e(x.name)}</td><td class=\"{status_class}\">{x.status}</td>"
                   f"<td class=\"num\">{x.seconds:.1f}</td><td>{_e(x.message)}</td><td>{metrics}</td></tr>")
    out.append("</tbody></table>")
    out = [f'<div class="scroll">{"".join(out)}</div>', section_bars(r)]
    for x in r.event.verdict.rungs:
        if x.details and x.status != "skip":
            out.append(f"<details><summary>{_e(x.name)} details</summary><pre>{_e(x.details)}</pre></details>")
    return "".join(out)


def section_bars(r: IterRow) -> str:
    """The sections step's regions as bars of their share of the programs' time (rungs/ladder/sections.py), with the
    spread across programs, then the unmarked time between regions in grey; empty when the step measured nothing."""
    step = r.event.verdict.rung("sections")
    regions = step.metrics.get("regions") if step is not None and step.status == "ok" else None
    if not regions:
        return ""
    rows = []
    gaps = [{"region": f"(unmarked) {g['between']}", "share": g.get("share"), "mean_cycles": "", "spread": "",
             "colour": "#b0b0b0"} for g in step.metrics.get("gaps") or []]
    for x in [*regions, *gaps]:
        share = float(x.get("share") or 0.0)
        rows.append(f'<tr><td>{_e(x["region"])}</td><td class="num">{share:.1%}</td><td><span class="bar" '
                    f'style="display:inline-block;height:0.8em;background:{x.get("colour", "#4a7bd0")};'
                    f'width:{min(share, 1.0) * 300:.0f}px"></span></td><td class="num">{_e(x.get("mean_cycles"))}'
                    f'</td><td class="num">{_e(x.get("spread"))}</td></tr>')
    return ('<h3>Sections</h3><table class="sections"><thead><tr><th>region</th><th>share</th><th></th>'
            "<th>mean cycles/program</th><th>spread (max/mean)</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def file_links(view: RunView, r: IterRow) -> str:
    d = f"iter-{r.n:03d}"
    links = [(name, f"{d}/{name}") for name in ("kernel.py", "diff.patch", "result.json")
             if (view.store.iter_dir(r.n) / name).is_file()]
    dumps = dump_dir_of(view, r.n)
    if dumps is not None:
        links.append(("dumps/", rel(view, dumps)))
        for f in sorted(dumps.iterdir()):
            if f.suffix in (".sass", ".ptx", ".ttgir", ".txt"):
                links.append((f.name, rel(view, f)))
    links += [(label, rel(view, path)) for label, path in linked_paths(r)]
    return "<p>Files: " + " · ".join(f'<a href="{_href(p)}">{_e(label)}</a>' for label, p in links) + "</p>"


def tree_html(view: RunView) -> str:
    """The search tree as nested lists, each node linking to its iteration's details."""
    parts = ['<ul id="tree" class="tree">']
    prev = 0
    for i, (r, depth) in enumerate(walk_tree(view)):
        if i:
            parts.append("<ul>" if depth > prev else "</li>" + "</ul></li>" * (prev - depth))
        e = r.event
        classes = ["dup" if e.duplicate_of else "", "regressed" if e.regressed else "",
                   "best" if view.best and view.best.iteration == r.n else ""]
        label = tree_label(r, view).removeprefix(f"iteration {r.n}")
        parts.append(f'<li data-node="{r.n}" data-parent="{r.base if r.base is not None else ""}" '
                     f'data-verdict="{e.verdict.verdict}" class="{" ".join(c for c in classes if c)}"><a href="#iter-{r.n}">iteration {r.n}</a>'
                     f"{_e(label)}")
        prev = depth
    parts.append(("</li>" + "</ul></li>" * prev if view.rows else "") + "</ul>")
    return "".join(parts)


def build_html(view: RunView) -> str:
    info = view.info
    stopped = view.stopped
    best_row = view.best_row
    facts = [("task", f"{info.task.get('name')} ({info.task_path})"), ("model", info.model),
             ("status", view.status + (f": {stopped.reason}" if stopped and view.status != "running" else "")),
             ("iterations", str(len(view.rows))),
             ("tokens in / out", f"{view.tokens_in} / {view.tokens_out}"), ("cost", f"${view.cost_usd:.4f}")]
    if info.parent:
        facts.append(("forked from", info.parent))
    if (gpus := gpu_line(view)) is not None:
        facts.append(("GPUs", gpus.removeprefix("- GPUs: ")))
    if (pace := pace_line(view)) is not None:
        facts.append(("pace", pace.removeprefix("- pace: ")))
    if best_row:
        runtime, fraction = best_row.metric("runtime_us"), best_row.metric("roofline_fraction")
        facts.append(("best", f"iteration {best_row.n}" + (f", {runtime:.1f} us" if runtime is not None else "")
                      + (f", {fraction:.1%} of the roofline" if fraction is not None else "")))
    else:
        facts.append(("best", "no passing kernel yet"))
    body = [f"<h1>Run {_e(view.store.id)}</h1>", '<dl class="facts">'
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts) + "</dl>",
            '<section id="progress"><h2>Progress</h2>', plot_svg(view)]
    if not view.any_runtime and view.rows:
        body.append('<p class="note">No runtimes in this run: the benchmark rung did not run (no GPU), so the plot '
                    "shows each iteration's verdict. Runtime and roofline fraction are plotted when there are timings.</p>")
    body += ["</section>", '<section><h2>Iterations</h2><div class="scroll">', iteration_table(view), "</div>",
             '<p class="note">Click a row for its rungs, metric tables and diff.</p></section>']
    if view.is_tree:
        body.append(f'<section id="search"><h2>Search tree</h2><p class="note">{_e(view.info.strategy)}, '
                    f'{view.info.candidates} candidate(s) per iteration; each candidate under the one it improved '
                    f'on.</p>{tree_html(view)}</section>')
    if view.steering:
        body.append('<section id="steering"><h2>Steering</h2><ul>' + "".join(
            f"<li>{_e(e.action)}" + (f" (iteration {e.iteration})" if e.iteration else "")
            + (f": {_e(e.text)}" if e.text else "") + "</li>" for e in view.steering) + "</ul></section>")
    body.append('<section><h2>Each iteration</h2>')
    last = view.rows[-1].n if view.rows else None
    for r in view.rows:
        e = r.event
        opened = " open" if r.n in (last, best_row.n if best_row else None) else ""
        origin = "edited by the user" if e.source == "user" else "written by the model"
        body.append(f'<details class="iteration" id="iter-{r.n}"{opened}><summary>Iteration {r.n}: '
                    f'<span class="{e.verdict.verdict}">{_e(clip(e.verdict.summary, MESSAGE_CHARS))}</span></summary>')
        body.append(f"<p>{origin}" + (f", from iteration {r.base}'s kernel" if r.base else "")
                    + f"; diff +{r.added} −{r.removed}" + (f"; {r.wall_s:.1f} s" if r.wall_s is not None else "")
                    + "</p>")
        if e.notes:
            body.append(f"<blockquote>{_e(clip(e.notes.strip().split('```')[0].strip(), 1500, keep_lines=True))}</blockquote>")
        body += [rung_tables(r), f"<h3>Diff against iteration {r.base}</h3>" if r.base else "<h3>Kernel</h3>",
                 side_by_side(view, r), file_links(view, r), "</details>"]
    body.append("</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>Run {_e(view.store.id)}</title>"
            f"<link rel=\"icon\" href=\"data:,\"><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + f"\n<script>{JS}</script>\n</body></html>\n")
