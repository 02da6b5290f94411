"""What a person sees while a run or a check goes on.

- LiveView: in a terminal, one refreshing table (iteration, the rung running and for how long, each verdict).
  Every candidate has its row, duplicates and replies with no kernel included; the seconds column is report.md's.
- PlainProgress: when stdout is not a terminal (a pipe, a log file, CI), one plain line per rung as it ends and one
  per candidate as it is journaled, so a long run is never silent.
- CheckView: `harness check` in a terminal: the rung running, with its time, under the rung lines so far.
"""
from __future__ import annotations

import time
from typing import Callable

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from harness.events import IterationFinished
from rungs.core.fmt import clip
from rungs.core.result import RungResult, Verdict

STATUS_STYLE = {"ok": "green", "fail": "red", "skip": "dim"}
MESSAGE_CHARS = 90
"""Longest failure message in a live table row; the full one is in the run folder and the report."""


def verdict_cells(verdict: Verdict, duplicate_of: int | None = None) -> tuple[Text, Text]:
    """(verdict, failed rung / message) of a row; a duplicate says which candidate it copies."""
    failed = verdict.rung(verdict.failed_rung) if verdict.failed_rung else None
    message = f"{verdict.failed_rung}: {failed.message}" if failed else ""
    if duplicate_of is not None:
        message = f"same kernel as {duplicate_of}: not climbed" + (f"; {message}" if message else "")
    return (Text(verdict.verdict, style={"pass": "green", "unverified": "yellow"}.get(verdict.verdict, "red")),
            Text(clip(message, MESSAGE_CHARS)))


def rung_line(result: RungResult, limit: int | None = None) -> Text:
    """`  ok compile      3 kernel specialization(s) compiled ...`: status, rung, message (plain text, no markup)."""
    message = clip(result.message, limit) if limit else result.message
    return Text.assemble((f"{result.status:>4}", STATUS_STYLE[result.status]), f" {result.name:<12} {message}")


class LiveView:
    """The run's table in a terminal; also the agent's observer (harness/agent.Observer)."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.iteration = 0
        self.rung = ""
        self.rung_t0 = time.monotonic()
        """When the running rung started (the row shows its seconds)."""
        self.rows: dict[int, tuple[str | Text, ...]] = {}
        """Iteration -> its row: a climbed candidate's at once (seconds still blank), every candidate's as its round
        is journaled, with the seconds report.md shows."""
        self.live = Live(console=console, refresh_per_second=4, transient=False, get_renderable=self.render)

    def __enter__(self) -> "LiveView":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.rung = ""
        self.live.refresh()
        self.live.__exit__(*exc)

    def render(self) -> Table:
        table = Table(title=Text(self.title), title_justify="left", expand=False)
        for col in ("iter", "verdict", "failed rung / message", "runtime_us", "roofline", "s"):
            table.add_column(col)
        for n in sorted(self.rows):
            table.add_row(*self.rows[n])
        if self.rung:
            table.add_row(str(self.iteration), Text("running", style="yellow"),
                          Text(f"{self.rung} ({time.monotonic() - self.rung_t0:.0f} s)"), "", "", "")
        return table

    # Observer protocol (harness/agent.py)
    def iteration_started(self, n: int) -> None:
        self.iteration, self.rung, self.rung_t0 = n, "model", time.monotonic()

    def rung_started(self, name: str) -> None:
        self.rung, self.rung_t0 = name, time.monotonic()

    def climb_started(self, n: int) -> None:
        """Several candidates per iteration: they are written first, then climb (the row names the climbing one)."""
        self.iteration = n

    def rung_finished(self, result: RungResult) -> None:
        pass  # the row shows the verdict when the iteration ends

    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        """A climb ended: its row shows the verdict now; its seconds come when the round is journaled."""
        self._row(n, verdict, None, "")
        self.rung = ""
        self.live.refresh()

    def iteration_recorded(self, event: IterationFinished, seconds: float) -> None:
        """A candidate journaled (harness/agent.commit), climbed or not: a duplicate, a reply with no kernel."""
        self._row(event.iteration, event.verdict, event.duplicate_of, f"{seconds:.1f}")
        self.live.refresh()

    def _row(self, n: int, verdict: Verdict, duplicate_of: int | None, seconds: str) -> None:
        runtime = verdict.metric("runtime_us")
        fraction = verdict.metric("roofline_fraction")
        self.rows[n] = (str(n), *verdict_cells(verdict, duplicate_of),
                        f"{runtime:.1f}" if runtime else "-", f"{fraction:.0%}" if fraction else "-", seconds)

    def note(self, text: str) -> None:
        self.live.console.print(Text(text))


class PlainProgress:
    """One line per rung and per iteration on stdout, flushed at once (stdout is a pipe or a file)."""

    def __init__(self) -> None:
        self.iteration = 0
        self.climbed: set[int] = set()

    def _line(self, text: str) -> None:
        print(text, flush=True)

    def iteration_started(self, n: int) -> None:
        self.iteration = n
        self._line(f"iteration {n}: asking the model")

    def rung_started(self, name: str) -> None:
        pass  # the line comes when the rung ends, with its verdict

    def climb_started(self, n: int) -> None:
        self.iteration = n  # several candidates: written first, then climbed (a line names the climbing one)

    def rung_finished(self, result: RungResult) -> None:
        took = f" ({result.seconds:.1f} s)" if result.status != "skip" else ""
        self._line(f"iteration {self.iteration}: {result.status:>4} {result.name:<12} "
                   f"{clip(result.message, 200)}{took}")

    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        self.climbed.add(n)  # its line comes when it is journaled, with the seconds report.md shows

    def iteration_recorded(self, event: IterationFinished, seconds: float) -> None:
        """Every candidate, climbed or not (a duplicate; a reply with no kernel, whose message no rung line said)."""
        v, n = event.verdict, event.iteration
        failed = v.rung(v.failed_rung) if v.failed_rung else None
        said = n in self.climbed or event.duplicate_of is not None  # a rung line gave the message as it ended
        self._line(f"iteration {n}: {v.verdict}" + (f" (failed at {v.failed_rung})" if v.failed_rung else "")
                   + (f": {clip(failed.message, 200)}" if failed and not said else "") + f" in {seconds:.1f} s"
                   + (f" on GPU {v.gpu.index}" if v.gpu is not None and event.duplicate_of is None else "")
                   + (f"; same kernel as {event.duplicate_of}: not climbed" if event.duplicate_of is not None else ""))
        self.climbed.discard(n)

    def note(self, text: str) -> None:
        self._line(text)


class CheckView:
    """`harness check` in a terminal: finished rungs as lines, the running one with a spinner and its seconds."""

    def __init__(self, console: Console, show: Callable[[RungResult], None]) -> None:
        self.console = console
        self.show = show
        """Prints one finished rung (its line and details); printed above the spinner while the view is live."""
        self.rung = ""
        self.rung_t0 = time.monotonic()
        self.live = Live(console=console, refresh_per_second=4, transient=True, get_renderable=self.render)

    def __enter__(self) -> "CheckView":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.rung = ""
        self.live.__exit__(*exc)

    def render(self) -> Group:
        if not self.rung:
            return Group()
        return Group(Spinner("dots", text=Text(f"{self.rung} ({time.monotonic() - self.rung_t0:.0f} s)")))

    def rung_started(self, name: str) -> None:
        self.rung, self.rung_t0 = name, time.monotonic()

    def climb_started(self, n: int) -> None:
        """Several candidates per iteration: they are written first, then climb (the row names the climbing one)."""
        self.iteration = n

    def rung_finished(self, result: RungResult) -> None:
        self.rung = ""
        self.show(result)
