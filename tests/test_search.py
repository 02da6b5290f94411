"""Several candidates per iteration (harness/search.py): a replayed round of four candidates with beam:2 through the
real loop and the real ladder (CPU), identical candidates climbed once, a regression recorded, exact budgets, the
tree in the report (headless Chromium: marked `chromium`), and a run killed with SIGKILL mid-round that resumes to
the same tree.

To stay quick, the transcripts hold one kernel that climbs the whole ladder (the row-wise demo); the others fail
the precheck (no entry point), which judges them in the harness's own process in milliseconds.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import TASKS
from lean import DEMOS, LEAN_YAML, journal, kill_when, lean_task
from test_report_html import chromium, console_lines
from test_steer import env, harness

from harness.agent import Agent, AgentConfig, QuietObserver
from harness.executors import Told
from harness.models import load_model
from harness.search import Beam, BestOfN, Latest, duplicates, parse_strategy
from harness.store import RunStore
from rungs.core.errors import BadInput

ROWWISE = (DEMOS / "softmax_3_rowwise.py").read_text()
USAGE = {"input_tokens": 1000, "output_tokens": 100, "cost_usd": 0.25}


def bad(i: int) -> str:
    return f"import triton\n\n\ndef not_the_entry_{i}(x):\n    return x\n"


def turn(code: str | None) -> dict:
    return {"text": "no kernel this time" if code is None else f"a candidate\n\n```python\n{code}```\n",
            "usage": USAGE}


def write_transcript(path: Path, rounds: list[list[str | None]]) -> Path:
    path.write_text("".join(json.dumps({"candidates": [turn(c) for c in r]}) + "\n" for r in rounds))
    return path


def tree(events: list[dict]) -> list[tuple]:
    return [(e["iteration"], e["round"], e["parent"], e["duplicate_of"], e["regressed"], e["verdict"]["failed_rung"])
            for e in events if e["type"] == "iteration"]


class CountingObserver(QuietObserver):
    def __init__(self) -> None:
        self.rungs: list[str] = []

    def rung_started(self, name: str) -> None:
        self.rungs.append(name)


def test_strategies_pick_parents_and_bad_values_say_so():
    assert parse_strategy("beam:2") == Beam(width=2, name="beam:2") and parse_strategy("greedy") == Beam()
    assert isinstance(parse_strategy("best-of-n"), BestOfN) and isinstance(parse_strategy("latest"), Latest)
    for text in ("beam", "beam:0", "beam:x", "greedy:2", "best"):
        with pytest.raises(BadInput, match="known: latest, greedy, beam:K"):
            parse_strategy(text)
    assert Beam(width=2).parents([], None, 3) == [None, None, None]
    assert BestOfN().parents([], 4, 2) == [None, None] and Latest().parents([], 4, 2) == [4, 4]


def test_bad_strategy_is_one_line_exit_2():
    p = harness("run", str(TASKS / "softmax.yaml"), "--candidates", "4", "--strategy", "beam:zero")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert [ln for ln in p.stderr.splitlines() if ln.strip()] == \
        ["error: --strategy 'beam:zero': not a strategy; known: latest, greedy, beam:K (K >= 1), best-of-n"]


def test_shipped_transcript_holds_rounds_of_four_demo_candidates():
    from harness.models.replay import load_rounds

    turns, widths = load_rounds(TASKS / "softmax.candidates.jsonl")
    assert widths == [4, 4, 4] and len(turns) == 13  # one candidate calls a tool before it submits
    assert sum("```python" in t.text for t in turns) == 11


def test_beam_of_four_candidates_climbs_each_kernel_once_within_exact_budgets(lean_softmax_task, tmp_path):
    transcript = write_transcript(tmp_path / "rounds.jsonl", [
        [bad(1), ROWWISE, bad(2), ROWWISE],
        [bad(3), ROWWISE, bad(1), None],
        [ROWWISE, bad(4), bad(5), bad(6)]])
    budgets = lean_softmax_task.budgets.overridden({"tokens": 9 * 1100})
    store = RunStore.create(tmp_path / "runs", lean_softmax_task, f"replay:{transcript}", budgets.model_dump(),
                            strategy="beam:2", candidates=4)
    seen = CountingObserver()
    agent = Agent(task=lean_softmax_task, model=load_model(f"replay:{transcript}"), store=store, budgets=budgets,
                  dumps_root=tmp_path / "dumps", strategy=parse_strategy("beam:2"),
                  config=AgentConfig(candidates=4, parallel=2))
    stop = agent.run(seen)
    assert stop.status == "budget" and stop.reason == "token budget spent (9900 of 9900 tokens)"
    events = journal(store.root)
    # round 2's parents are the two best of round 1 (the pass, then the newer of the precheck failures); round 3
    # stopped at its first candidate's turn (the budget is checked before every model call), which still climbed
    assert tree(events) == [
        (1, 1, None, None, False, "precheck"), (2, 1, None, None, False, None),
        (3, 1, None, None, False, "precheck"), (4, 1, None, 2, False, None),
        (5, 2, 2, None, True, "precheck"), (6, 2, 3, 2, False, None),
        (7, 2, 2, 1, True, "precheck"), (8, 2, 3, None, False, "precheck"),
        (9, 3, 2, 2, False, None)]
    assert seen.rungs.count("compile") == 1  # the row-wise kernel, written four times, climbed once
    replies = [e for e in events if e["type"] == "model_reply"]
    assert len(replies) == 9 and agent.usage.input_tokens + agent.usage.output_tokens == 9900
    assert agent.usage.cost_usd == 9 * 0.25 and agent.round == 3
    assert json.loads((store.root / "best" / "result.json").read_text())["iteration"] == 2
    assert (store.root / "iter-005" / "diff.patch").read_text().startswith("--- previous/kernel.py")
    assert "Candidate 2 of 4 this round" in events[[e["type"] for e in events].index("prompt", 3)]["messages"][1]["content"]
    md = (store.root / "report.md").read_text()
    assert "  - iteration 7 (round 2): fail at precheck; same kernel as 1: not climbed; regressed from its parent" in md
    # the run's pace: the four kernels that climbed (four more were duplicates, one reply had no kernel) over the
    # run's wall time, as an hourly rate
    pace = re.search(r"^- pace: 4 candidates climbed in ([0-9.]+) s of wall time, ([0-9]+) per hour", md, re.M)
    started = next(e["time"] for e in events if e["type"] == "run_started")
    last = max(e["time"] for e in events if e["type"] == "iteration")
    assert pace and float(pace[1]) == pytest.approx(last - started, abs=0.06), md
    assert abs(int(pace[2]) - 3600 * 4 / (last - started)) <= 1
    # and after the first round (where a task's one-off costs fall): of rounds 2 and 3 only iteration 6 climbed (5, 7
    # and 9 are duplicates, 8 had no kernel), timed from round 1's last verdict to the run's last
    later = re.search(r"; after the first round \(.*?\): 1 in ([0-9.]+) s, ([0-9]+) per hour$", md, re.M)
    round1_end = max(e["time"] for e in events if e["type"] == "iteration" and e["round"] == 1)
    assert later and float(later[1]) == pytest.approx(last - round1_end, abs=0.06), md
    # the same tree in report.html, opened in Chromium: test_search_tree_renders_in_headless_chromium


@pytest.mark.chromium
def test_search_tree_renders_in_headless_chromium(lean_softmax_task, tmp_path):
    """report.html's tree of the beam run above (the parents and duplicates it journaled), journaled without
    climbing, as Chromium lays it out: each node under its parent."""
    from harness.report import write_report
    from harness.search import Draft
    from rungs.core.result import RungResult, Verdict

    store = RunStore.create(tmp_path / "runs", lean_softmax_task, "replay:demo",
                            lean_softmax_task.budgets.model_dump(), strategy="beam:2", candidates=4)
    agent = Agent(task=lean_softmax_task, model=load_model(f"replay:{TASKS / 'softmax.demo.jsonl'}"), store=store,
                  budgets=lean_softmax_task.budgets, dumps_root=tmp_path / "dumps")
    passed = Verdict(verdict="pass", rungs=[RungResult(name="correctness", status="ok")])
    failed = Verdict(verdict="fail", failed_rung="precheck", rungs=[RungResult(name="precheck", status="fail")])
    code = {1: bad(1), 2: ROWWISE, 3: bad(2), 5: bad(3), 8: bad(4)}
    same = {4: 2, 6: 3, 7: 1, 9: 2}
    for rnd, nodes, parents in [(1, [1, 2, 3, 4], [None] * 4), (2, [5, 6, 7, 8], [2, 3, 2, 3]), (3, [9], [2])]:
        agent.round = rnd
        agent.commit([(Draft(node=n, parent=p, code=code[same.get(n, n)], notes=""),
                       passed if code[same.get(n, n)] == ROWWISE else failed) for n, p in zip(nodes, parents)], same)
    write_report(store)

    page = store.root / "report.html"
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", """<script>
document.body.dataset.tree = Array.prototype.map.call(document.querySelectorAll('#tree li'), function (li) {
  var up = li.parentElement.closest('li'); return li.dataset.node + '<' + (up ? up.dataset.node : '-'); }).join(',');
</script></body>"""))
    d = chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert d.returncode == 0 and not console_lines(d.stderr), d.stderr[-2000:]
    assert 'data-ready="1"' in d.stdout and "<h2>Search tree</h2>" in d.stdout
    shown = d.stdout.split('data-tree="')[1].split('"')[0].replace("&lt;", "<")
    assert sorted(shown.split(",")) == sorted(["1<-", "2<-", "3<-", "4<-", "5<2", "6<3", "7<2", "8<3", "9<2"])


def test_sigkill_mid_round_then_resume_finishes_the_same_tree(tmp_path):
    task, _ = lean_task(tmp_path, [])
    task.write_text(LEAN_YAML.replace("iterations: 8", "iterations: 3"))
    transcript = write_transcript(tmp_path / "rounds.jsonl", [
        [bad(1), bad(2), bad(3), bad(1)],
        [ROWWISE, bad(4), ROWWISE, None],
        [ROWWISE, bad(2), bad(1), bad(5)],
        [bad(6), bad(7), bad(8), bad(9)]])  # never asked for: the iteration budget is three rounds
    runs = tmp_path / "runs"
    run = kill_when(["run", str(task), "-q", "--candidates", "4", "--strategy", "beam:2", "--model",
                     f"replay:{transcript}", "--runs-dir", str(runs), "--dumps-dir", str(tmp_path / "dumps")],
                    runs, env=env(), what="round 2",
                    # round 2's candidates are written: the row-wise one climbs
                    ready=lambda events: any(e["type"] == "model_reply" and e["iteration"] == 8 for e in events))
    before = journal(run)
    assert [e["iteration"] for e in before if e["type"] == "iteration"] == [1, 2, 3, 4], "round 2 was journaled"

    r = harness("resume", str(run), "-q")
    assert r.returncode == 0, r.stderr
    events = journal(run)
    assert events[:len(before)] == before
    resumed = next(e for e in events if e["type"] == "run_resumed")
    assert (resumed["next_iteration"], resumed["redone"], resumed["skipped_turns"]) == (5, 5, 4)
    assert tree(events) == [
        (1, 1, None, None, False, "precheck"), (2, 1, None, None, False, "precheck"),
        (3, 1, None, None, False, "precheck"), (4, 1, None, 1, False, "precheck"),
        (5, 2, 3, None, False, None), (6, 2, 2, None, False, "precheck"),
        (7, 2, 3, 5, False, None), (8, 2, 2, None, False, "precheck"),
        (9, 3, 5, 5, False, None), (10, 3, 6, 2, False, "precheck"),
        (11, 3, 5, 1, True, "precheck"), (12, 3, 6, None, False, "precheck")]
    assert events[-1]["reason"] == "iteration budget spent (3 iterations)"
    # every model call was paid for once, the killed round's four included: 4 + 4 + 4 after the resume, 4 before
    replies = [e for e in events if e["type"] == "model_reply"]
    assert len(replies) == 16 and sum(e["usage"]["cost_usd"] for e in replies) == 16 * 0.25
    listed = [json.loads(line) for line in harness("runs", "--runs-dir", str(runs), "--json").stdout.splitlines()]
    assert [(row["status"], row["iterations"], row["best_iteration"]) for row in listed] == [("budget", 12, 5)]


def test_duplicates_point_at_the_first_of_their_source():
    from harness.search import Draft

    drafts = [Draft(node=n, parent=None, code=c, notes="") for n, c in [(1, "a"), (2, "b"), (3, "a"), (4, None)]]
    assert duplicates(drafts, []) == {3: 1}


def test_piped_progress_and_the_menus_summary_show_every_candidate_of_a_round(lean_softmax_task, tmp_path, capsys):
    """Issue 37: beside the live table (tests/test_terminal.py), the piped lines and --interactive's summary after a
    round named only the climbed candidates (the summary only the last one): a duplicate and a reply with no kernel
    are there too, with report.md's seconds."""
    import io

    from rich.console import Console

    from harness.agent import NO_KERNEL
    from harness.interactive import Interactive
    from harness.live import PlainProgress
    from harness.report import run_view
    from harness.search import Draft
    from rungs.core.result import RungResult, Verdict

    store = RunStore.create(tmp_path / "runs", lean_softmax_task, "replay:demo",
                            lean_softmax_task.budgets.model_dump(), strategy="beam:2", candidates=3)
    agent = Agent(task=lean_softmax_task, model=load_model(f"replay:{TASKS / 'softmax.demo.jsonl'}"), store=store,
                  budgets=lean_softmax_task.budgets, dumps_root=tmp_path / "dumps")
    agent._told = Told(PlainProgress())  # what run(PlainProgress()) does: this test journals without running
    passed = Verdict(verdict="pass", rungs=[RungResult(name="correctness", status="ok", seconds=2.5)])
    agent.round = 1
    agent.commit([(Draft(node=1, parent=None, code=ROWWISE, notes=""), passed),
                  (Draft(node=2, parent=None, code=ROWWISE, notes=""), passed),
                  (Draft(node=3, parent=None, code=None, notes=""), NO_KERNEL)], same={2: 1})
    assert capsys.readouterr().out.splitlines() == [
        "iteration 1: pass in 2.5 s", "iteration 2: pass in 2.5 s; same kernel as 1: not climbed",
        "iteration 3: fail (failed at precheck): the reply held no kernel: submit it with submit_kernel or in a "
        "```python fenced block in 0.0 s"]
    assert [f"{r.wall_s:.1f}" for r in run_view(store).rows] == ["2.5", "2.5", "0.0"]

    shown = io.StringIO()
    Interactive(agent, Console(file=shown, width=200)).summary()
    lines = [ln for ln in shown.getvalue().splitlines() if ln.startswith("iteration")]
    assert lines == ["iteration 1 (model): pass", "iteration 2 (model): pass; same kernel as 1: not climbed",
                     "iteration 3 (model): fail at precheck"], shown.getvalue()


def _timed(us: float):
    from rungs.core.result import RungResult, Verdict

    return Verdict(verdict="pass", rungs=[RungResult(name="benchmark", status="ok", metrics={"runtime_us": us})])


def test_a_search_profiles_only_the_candidates_that_beat_its_best(tmp_path):
    """--profile improving (a search's default): each round's climbs carry the run's best time so far, and the
    profile rung leaves a slower candidate unprofiled (its own test: tests/test_profile.py)."""
    from harness.events import IterationFinished

    from harness.spec import load_task

    task = load_task(TASKS / "softmax.yaml")
    store = RunStore.create(tmp_path / "runs", task, "replay:x", {}, strategy="greedy", candidates=4,
                            profile="improving")
    agent = Agent(task=task, model=load_model("human"), store=store, budgets=task.budgets, dumps_root=tmp_path / "d",
                  config=AgentConfig(candidates=4, profile="improving"))
    assert "profile_under_us" not in agent.climb_context().ladder_options  # nothing timed yet: all are profiled
    for n, us in ((1, 530.0), (2, 519.6), (3, 700.0)):
        store.journal.append(IterationFinished(iteration=n, kernel_sha=str(n), verdict=_timed(us), round=1))
    assert agent.climb_context().ladder_options["profile_under_us"] == 519.6
    every = Agent(task=task, model=load_model("human"), store=store, budgets=task.budgets,
                  dumps_root=tmp_path / "d", config=AgentConfig(candidates=4))
    assert "profile_under_us" not in every.climb_context().ladder_options  # --profile all
    assert store.info().profile == "improving"  # kept for `harness resume`


def test_profile_mode_is_checked_in_one_line(tmp_path):
    r = harness("run", str(TASKS / "softmax.yaml"), "--profile", "some", "--runs-dir", str(tmp_path))
    assert r.returncode == 2 and "--profile some: expected all or improving" in r.stderr
