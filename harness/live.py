"""The live view: which iteration, which rung is running, and the last verdict, on one refreshing panel."""
from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rungs.result import Verdict


class LiveView:
    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.iteration = 0
        self.rung = ""
        self.rung_started = time.monotonic()
        self.rows: list[tuple[str, ...]] = []
        self.live = Live(self.render(), console=console, refresh_per_second=4, transient=False)

    def __enter__(self) -> "LiveView":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.rung = ""
        self.live.update(self.render())
        self.live.__exit__(*exc)

    def render(self) -> Table:
        table = Table(title=self.title, title_justify="left", expand=False)
        for col in ("iter", "verdict", "failed rung / message", "runtime_us", "roofline", "s"):
            table.add_column(col)
        for row in self.rows:
            table.add_row(*row)
        if self.rung:
            table.add_row(str(self.iteration), Text("running", style="yellow"),
                          f"{self.rung} ({time.monotonic() - self.rung_started:.0f} s)", "", "", "")
        return table

    # Observer protocol (harness/agent.py)
    def iteration_started(self, n: int) -> None:
        self.iteration, self.rung = n, "model"
        self.rung_started = time.monotonic()
        self.live.update(self.render())

    def rung_started(self, name: str) -> None:
        self.rung, self.rung_started = name, time.monotonic()
        self.live.update(self.render())

    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        failed = verdict.rung(verdict.failed_rung) if verdict.failed_rung else None
        style = "green" if verdict.verdict == "pass" else "red"
        runtime = verdict.metric("runtime_us")
        fraction = verdict.metric("roofline_fraction")
        self.rows.append((str(n), f"[{style}]{verdict.verdict}[/{style}]",
                          f"{verdict.failed_rung}: {failed.message[:90]}" if failed else "",
                          f"{runtime:.1f}" if runtime else "-", f"{fraction:.0%}" if fraction else "-",
                          f"{seconds:.1f}"))
        self.rung = ""
        self.live.update(self.render())

    def note(self, text: str) -> None:
        self.live.console.print(text)
