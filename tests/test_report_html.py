"""report.html opened in headless Chromium: it renders, shows the plot and the table, and logs no console errors.

Every test here is marked `chromium`: without the browser they skip in one line, except in CI (env CI set), where
.ci/run installs Debian's package and a missing browser fails them (tests/conftest.py).
"""
from __future__ import annotations

import html
import subprocess
from pathlib import Path

import pytest

from harness.agent import Agent
from harness.events import Steered
from harness.models import load_model
from harness.report import write_report
from harness.store import RunStore
from rungs.core.result import RungResult, Verdict

from conftest import TASKS, chromium_binary, missing_chromium

pytestmark = pytest.mark.chromium
DEMOS = TASKS / "demos"


def chromium_path() -> str:
    path = chromium_binary()
    if path is None:  # a test that is not marked `chromium` (the mark skips or fails it before it starts)
        missing_chromium()
    return path


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run([chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


def console_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def verdict(failed: str | None, runtime_us: float | None = None, fraction: float | None = None) -> Verdict:
    rungs = [RungResult(name="precheck", status="ok", message="ok"),
             RungResult(name="compile", status="fail" if failed == "compile" else "ok",
                        message="arange's arguments must be of type tl.constexpr" if failed == "compile" else "")]
    if failed != "compile":
        rungs.append(RungResult(name="correctness", status="fail" if failed else "ok",
                                message="worst element [0, 5]: got 0.4, expected 0.47" if failed else "15 cases match",
                                metrics={"rel_l2": 0.09 if failed else 1e-7},
                                details="case    shape    max_abs\nc000    M=4 N=7  3.4e-01"))
    if runtime_us is not None:
        rungs.append(RungResult(name="benchmark", status="ok", message=f"{runtime_us} us",
                                metrics={"runtime_us": runtime_us, "gbps": 2.0e6 / runtime_us,
                                         "speedup_vs_eager": 700.0 / runtime_us}))
        rungs.append(RungResult(name="roofline", status="ok", metrics={"roofline_fraction": fraction}))
        rungs.append(RungResult(name="sections", status="ok", message="load 60%", metrics={  # as on the H200
            "regions": [{"region": "load", "share": 0.6, "mean_cycles": 900.0, "spread": 1.02},
                        {"region": "exp", "share": 0.25, "mean_cycles": 375.0, "spread": 1.1}],
            "gaps": [{"between": "exp -> load", "share": 0.15, "total_cycles": 2250}]}))
    return Verdict(verdict="fail" if failed else "pass", failed_rung=failed, rungs=rungs)


def make_run(task, tmp: Path, timed: bool) -> RunStore:
    """A run folder written through the agent's own record(), without climbing the ladder."""
    store = RunStore.create(tmp / "runs", task, "replay:demo", task.budgets.model_dump())
    agent = Agent(task=task, model=load_model(f"replay:{TASKS / 'softmax.demo.jsonl'}"), store=store,
                  budgets=task.budgets, dumps_root=tmp / "dumps")
    plan = [("softmax_1_nocompile.py", verdict("compile"), "model"),
            ("softmax_2_wrong.py", verdict("correctness"), "model"),
            ("softmax_3_rowwise.py", verdict(None, 900.0 if timed else None, 0.55), "user"),
            ("softmax_4_tuned.py", verdict(None, 520.0 if timed else None, 0.93), "model")]
    for n, (name, v, source) in enumerate(plan, 1):
        if n == 4:
            store.journal.append(Steered(action="revert", iteration=2, text="from 2"))
            agent.revert_to(2)
        agent.record(n, (DEMOS / name).read_text(), v, f"notes for {n} <b>not bold</b>", source)
    write_report(store)
    return store


@pytest.mark.parametrize("timed", [False, True], ids=["cpu-run", "timed-run"])
def test_report_html_renders_in_headless_chromium(softmax_task, tmp_path, timed):
    store = make_run(softmax_task, tmp_path, timed)
    page = store.root / "report.html"
    text = page.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in text

    shot = tmp_path / "shot.png"
    p = chromium(tmp_path, "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri())
    assert p.returncode == 0, p.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert not console_lines(p.stderr), console_lines(p.stderr)

    d = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert d.returncode == 0, d.stderr[-2000:]
    assert not console_lines(d.stderr), console_lines(d.stderr)
    dom = d.stdout
    assert 'data-ready="1"' in dom  # the page's script ran to its end
    assert '<svg id="plot"' in dom and '<table id="iterations">' in dom
    assert dom.count("data-iter=") == 4
    assert 'class="diff"' in dom  # side-by-side diffs
    assert "&lt;b&gt;not bold&lt;/b&gt;" in dom  # notes are escaped
    if timed:
        assert 'data-mode="runtime"' in dom and 'class="series"' in dom and "target 90%" in dom
        assert dom.count('<table class="sections">') == 2 and "(unmarked) exp -&gt; load" in dom  # the bars
        assert "width:180px" in dom and "width:45px" in dom
    else:
        assert 'data-mode="verdicts"' in dom and "No runtimes" in dom
    assert "iter-003/kernel.py" in dom and "Diff against iteration 2" in dom  # the revert is the diff's base


def test_console_errors_are_caught(tmp_path):
    """The check above is not vacuous: a page that throws is seen."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    p = chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert any("undefinedFunction" in ln for ln in console_lines(p.stderr)), p.stderr[-2000:]


LONG_FAILURE = ("case c003 (M=4 N=7 float32 seed=726135632 normal): max_abs_scaled 0.26 > 0.0001; rel_l2 0.0348286 > "
                "1e-05; psnr_db 41.3 < 90; cosine 0.99942 < 0.999999; worst element [3, 5]: got 0.348286, expected "
                "0.500001; 28 of 28 elements off (100%); dim 0 (size 4): all; dim 1 (size 7): all")
MEASURE = """<script>
document.querySelectorAll('details').forEach(function (d) { d.open = true; });
var page = document.documentElement, body = document.body.getBoundingClientRect();
document.body.dataset.overflow = [page.scrollWidth - page.clientWidth].concat(
  Array.prototype.map.call(document.querySelectorAll('table.diff'), function (t) {
    return Math.ceil(t.getBoundingClientRect().right - body.right); })).join(',');
</script></body>"""


def test_cpu_report_fits_the_page_and_hides_empty_columns(softmax_task, tmp_path):
    """Issue 12: on a CPU run seven of fourteen columns were always empty, the side-by-side diff's right column ran
    off the page, and failure messages were cut mid-number."""
    store = RunStore.create(tmp_path / "runs", softmax_task, "replay:demo", softmax_task.budgets.model_dump())
    agent = Agent(task=softmax_task, model=load_model(f"replay:{TASKS / 'softmax.demo.jsonl'}"), store=store,
                  budgets=softmax_task.budgets, dumps_root=tmp_path / "dumps")
    wide = (DEMOS / "softmax_3_rowwise.py").read_text().replace(
        "def kernel(x: torch.Tensor) -> torch.Tensor:",
        "def kernel(x: torch.Tensor) -> torch.Tensor:  # " + "a comment much wider than half of the page " * 4)
    failed = Verdict(verdict="fail", failed_rung="correctness",
                     rungs=[RungResult(name="correctness", status="fail", message=LONG_FAILURE)])
    agent.record(1, (DEMOS / "softmax_3_rowwise.py").read_text(), verdict(None), "first", "model")
    agent.record(2, wide, failed, "second", "model")
    write_report(store)
    page = store.root / "report.html"
    html_text = page.read_text()
    head = html_text.split('<table id="iterations">')[1].split("</thead>")[0]
    for gone in ("runtime_us", "GB/s", "TFLOP/s", "speedup", "roofline", "tokens", "$"):
        assert f"<th>{gone}</th>" not in head, gone
    assert "not shown: " in html_text and "<th>failed rung / message</th>" in head
    cell = html.unescape(html_text.split('<td title="correctness: ')[1].split("</td>")[0].split(">", 1)[1])
    shown = cell.removesuffix(" …")
    assert cell.endswith(" …") and LONG_FAILURE.startswith(shown.removeprefix("correctness: "))
    assert LONG_FAILURE[len(shown) - len("correctness: ")] in " ,;:"  # cut between words, never inside a number

    probe = page.with_name("probe.html")
    probe.write_text(html_text.replace("</body>", MEASURE))
    d = chromium(tmp_path, "--window-size=1280,2000", "--dump-dom", probe.as_uri())
    assert d.returncode == 0, d.stderr[-2000:]
    overflow = [int(x) for x in d.stdout.split('data-overflow="')[1].split('"')[0].split(",")]
    assert len(overflow) >= 2 and all(px <= 0 for px in overflow), overflow  # the page, then each diff table
