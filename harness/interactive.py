"""`harness run --interactive` (and `harness resume --interactive`): steer the loop from a terminal.

After each iteration: a one-screen summary (verdict, failing rung, time, speedup, roofline fraction, tokens,
dollars, diff stat) and a menu: continue, go on without asking, add a hint for the model, edit the kernel
in $EDITOR (checked by the ladder and recorded as the user's iteration), revert to iteration k (the next
iteration improves on k's kernel), fork a new run from iteration k, list the iterations, stop.

Ctrl-C never kills work in flight: the first press asks for a pause at the next safe point (before the
next rung, or after the iteration), where the menu opens; a second press stops at once (the run stays
resumable: finished iterations are in the journal, the one in flight is redone by `harness resume`).
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from types import FrameType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.prompt import Prompt
from rich.table import Table

from rungs.core.errors import BadInput
from harness.events import RunStopped, Steered
from harness.report import IterRow, fmt, run_view, write_report
from harness.resume import check_iteration, fork, journal_state, revert
from rungs.core.result import RungResult, Verdict

if TYPE_CHECKING:
    from harness.agent import Agent

MENU = ("  c continue · g go on (no menu until Ctrl-C) · h hint for the model · e edit the kernel\n"
        "  r revert to iteration k · f fork a new run from k · l list iterations · s stop")
PAUSE_MENU = ("  c continue this iteration · g go on (no menu until Ctrl-C) · h hint for the model\n"
              "  s stop (this iteration is redone on resume)")


class Interactive:
    """The agent's observer and between-rounds hook (what run_interactive hands `Agent.run`), and the SIGINT
    handler while the loop runs."""

    def __init__(self, agent: "Agent", console: Console) -> None:
        self.agent = agent
        self.console = console
        self.ask_each = True
        """Open the menu after every iteration (else only after a Ctrl-C)."""
        self.pause_requested = False
        self.in_prompt = False
        self.iteration = 0

    # ---- Ctrl-C ----------------------------------------------------------------------------------------
    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.in_prompt or self.pause_requested:
            raise KeyboardInterrupt  # the second press (or one at the menu): stop now
        self.pause_requested = True
        os.write(sys.stderr.fileno(), b"\n(Ctrl-C) pausing at the next safe point; press Ctrl-C again to stop now\n")

    # ---- Observer protocol (harness/agent.py) ----------------------------------------------------------
    def iteration_started(self, n: int) -> None:
        self.iteration = n
        self.console.print(f"[bold]iteration {n}[/bold]: asking the model", highlight=False)

    def rung_started(self, name: str) -> None:
        if self.pause_requested:
            self.pause_menu(name)
        self.console.print(f"  rung {name}", highlight=False)

    def rung_finished(self, result: RungResult) -> None:
        pass  # the summary after the iteration shows each rung

    def iteration_finished(self, n: int, verdict: Verdict, seconds: float) -> None:
        pass  # the summary is printed after the iteration is recorded (between_iterations)

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    # ---- the hook the loop calls after each iteration ----------------------------------------------------
    def __call__(self, agent: "Agent") -> None:
        from harness.agent import BudgetExceeded

        self.summary()
        try:
            agent.check_budgets()
        except BudgetExceeded as exc:
            self.console.print(f"{exc.reason}: the run stops (resume it with a larger budget to go on)",
                               highlight=False)
            return
        if self.ask_each or self.pause_requested:
            if self.pause_requested:
                self.console.print(f"paused after iteration {self.iteration}", highlight=False)
            self.pause_requested = False
            self.menu()

    # ---- prompts ------------------------------------------------------------------------------------------
    def ask(self, question: str, choices: list[str] | None = None, default: str | None = None) -> str:
        from harness.agent import UserStopped

        self.in_prompt = True
        try:
            if choices:
                return Prompt.ask(question, console=self.console, choices=choices, default=default,
                                  show_choices=False, show_default=True)
            return Prompt.ask(question, console=self.console, default=default or "", show_default=False)
        except (KeyboardInterrupt, EOFError):
            self.console.print()
            self.agent.store.journal.append(Steered(action="stop", text="Ctrl-C or end of input at the menu"))
            raise UserStopped("stopped by the user at the menu") from None
        finally:
            self.in_prompt = False

    def ask_iteration(self, verb: str) -> int | None:
        self.list_iterations()
        answer = self.ask(f"{verb} iteration (empty: cancel)").strip()
        if not answer:
            return None
        try:
            k = int(answer)
            check_iteration(self.agent.store, k)
        except ValueError:
            self.console.print(f"not an iteration number: {answer!r}", highlight=False)
            return None
        except BadInput as exc:
            self.console.print(str(exc), highlight=False, markup=False)
            return None
        return k

    # ---- menus ----------------------------------------------------------------------------------------------
    def menu(self) -> None:
        from harness.agent import UserStopped

        agent = self.agent
        while True:
            self.console.print(MENU, highlight=False, markup=False)
            choice = self.ask("choice", choices=list("cghefrls"), default="c")
            if choice == "c":
                self.ask_each = True
                return
            if choice == "g":
                self.ask_each = False
                self.console.print("going on without asking; Ctrl-C pauses at the next safe point", highlight=False)
                return
            if choice == "h":
                self.add_hint()
            elif choice == "e":
                if self.edit():
                    self.summary()
            elif choice == "r":
                k = self.ask_iteration("revert to")
                if k is not None:
                    revert(agent.store, k)
                    agent.revert_to(k)
                    self.console.print(f"the next iteration improves on iteration {k}'s kernel", highlight=False)
            elif choice == "f":
                k = self.ask_iteration("fork from")
                if k is not None:
                    self.fork(k)
            elif choice == "l":
                self.list_iterations()
            elif choice == "s":
                agent.store.journal.append(Steered(action="stop", text="stopped at the menu"))
                raise UserStopped("stopped by the user")

    def pause_menu(self, rung: str) -> None:
        """The menu at a safe point inside an iteration (before a rung): what does not need the verdict."""
        from harness.agent import UserStopped

        self.pause_requested = False
        self.console.print(f"paused in iteration {self.iteration} before the {rung} rung", highlight=False)
        while True:
            self.console.print(PAUSE_MENU, highlight=False, markup=False)
            choice = self.ask("choice", choices=list("cghs"), default="c")
            if choice == "c":
                self.ask_each = True  # the full menu opens when this iteration is recorded
                return
            if choice == "g":
                self.ask_each = False
                return
            if choice == "h":
                self.add_hint()
            elif choice == "s":
                self.agent.store.journal.append(Steered(action="stop", iteration=self.iteration,
                                                        text=f"stopped in iteration {self.iteration} before {rung}"))
                raise UserStopped(f"stopped by the user in iteration {self.iteration} (redone on resume)")

    # ---- actions ----------------------------------------------------------------------------------------------
    def add_hint(self) -> None:
        text = self.ask("hint for the model (empty: cancel)").strip()
        if text:
            self.agent.add_hint(text)
            self.console.print("the next prompt carries the hint", highlight=False)

    def edit(self) -> bool:
        """The user's kernel, from $EDITOR, through the ladder as the next iteration (source='user')."""
        agent = self.agent
        start = agent.base_kernel or ""
        n = agent.iteration + 1
        path = agent.store.root / f"edit-iter-{n:03d}.py"
        path.write_text(start)
        editor = os.environ.get("EDITOR") or os.environ.get("VISUAL") or "vi"
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the editor meanwhile
        try:
            rc = subprocess.run(shlex.split(editor) + [str(path)]).returncode
        except OSError as exc:
            self.console.print(f"could not start the editor {editor!r}: {exc}", highlight=False, markup=False)
            return False
        finally:
            signal.signal(signal.SIGINT, previous)
        code = path.read_text() if path.is_file() else start
        path.unlink(missing_ok=True)
        if rc != 0:
            self.console.print(f"the editor exited with status {rc}: the edit is dropped", highlight=False)
            return False
        if code == start:
            self.console.print("no change: nothing to check", highlight=False)
            return False
        agent.store.journal.append(Steered(action="edit", iteration=n, text=f"edited in {editor}"))
        self.iteration = n
        self.console.print(f"[bold]iteration {n}[/bold]: your edit, through the ladder", highlight=False)
        agent.check_and_record(n, code, "edited by the user", source="user")
        return True

    def fork(self, k: int) -> None:
        """Go on in a new run folder holding iterations 1..k; this run stops here."""
        agent = self.agent
        parent = agent.store
        child = fork(parent, k, dumps_root=agent.dumps_root)
        for hint in agent.hints:  # still pending: the fork's journal must carry them too
            child.journal.append(Steered(action="hint", text=hint))
        reason = f"forked at iteration {k} into {child.root}"
        parent.journal.append(RunStopped(reason=reason, status="stopped"))
        parent.set_status("stopped", reason)
        write_report(parent)
        agent.move_to(child, k, round=journal_state(child.journal.read()).last_round)
        child.mark_running(agent.dumps_root)
        self.console.print(f"forked: now in run folder {child.root} (parent {parent.id}@{k}); "
                           f"the next iteration improves on iteration {k}", highlight=False)

    # ---- what is shown ----------------------------------------------------------------------------------------
    def summary(self) -> None:
        """Each candidate of the last round: its verdict and numbers (duplicates and replies with no kernel too)."""
        view = run_view(self.agent.store)
        if not view.rows:
            return
        last = view.rows[-1].round
        for i, row in enumerate(view.rows):
            if row.round == last:
                self.summarize(view.rows[:i + 1])

    def summarize(self, rows: list[IterRow]) -> None:
        row = rows[-1]
        v = row.event.verdict
        verdict = {"pass": "[green]pass[/green]", "unverified": "[yellow]unverified[/yellow]"}.get(
            v.verdict, f"[red]fail[/red] at {v.failed_rung}")
        origin = f"{row.event.source}" + (f", from iteration {row.base}" if row.base else "")
        same = row.event.duplicate_of
        self.console.print(f"[bold]iteration {row.n}[/bold] ({origin}): {verdict}"
                           + (f"; same kernel as {same}: not climbed" if same is not None else ""), highlight=False)
        if row.message:
            self.console.print(f"  {row.message[:300]}", highlight=False, markup=False)
        usage = self.agent.usage
        parts = [f"time {fmt(row.wall_s, '.1f', '-')} s", f"runtime {fmt(row.metric('runtime_us'), '.1f', '-')} us",
                 f"speedup {self.speedup(rows)}",
                 f"roofline {fmt(row.metric('roofline_fraction'), '.1%', '-')}",
                 f"tokens {row.tokens_in}/{row.tokens_out} (run {usage.input_tokens + usage.output_tokens})",
                 f"${row.cost_usd:.4f} (run ${usage.cost_usd:.4f})", f"diff +{row.added} -{row.removed}"]
        self.console.print("  " + " · ".join(parts), highlight=False, markup=False)

    @staticmethod
    def speedup(rows: list[IterRow]) -> str:
        row = rows[-1]
        vs_eager = row.metric("speedup_vs_eager")
        if isinstance(vs_eager, (int, float)):
            return f"{vs_eager:.2f}x vs eager torch"
        runtime = row.metric("runtime_us")
        before = [r.metric("runtime_us") for r in rows[:-1] if r.event.verdict.verdict == "pass"
                  and isinstance(r.metric("runtime_us"), (int, float))]
        if isinstance(runtime, (int, float)) and runtime > 0 and before:
            return f"{min(before) / runtime:.2f}x vs the best before"
        return "-"

    def list_iterations(self) -> None:
        view = run_view(self.agent.store)
        table = Table(title=f"run {self.agent.store.id}", title_justify="left")
        for col in ("iter", "by", "from", "verdict", "runtime_us", "roofline"):
            table.add_column(col)
        for r in view.rows:
            v = r.event.verdict
            table.add_row(str(r.n), r.event.source, str(r.base or ""),
                          v.verdict if v.verdict != "fail" else f"fail at {v.failed_rung}",
                          fmt(r.metric("runtime_us"), ".1f", "-"), fmt(r.metric("roofline_fraction"), ".1%", "-"))
        self.console.print(table)


def require_terminal() -> None:
    if not sys.stdin.isatty():
        raise BadInput("--interactive needs a terminal; without one, steer a saved run with "
                       "`harness steer RUN --hint ...` and `harness resume RUN`")


def run_interactive(agent: "Agent", console: Console) -> RunStopped:
    """Run the loop with the menu; Ctrl-C pauses instead of killing work in flight."""
    require_terminal()
    session = Interactive(agent, console)
    console.print(f"interactive run {agent.store.root}: a menu after each iteration; Ctrl-C pauses at the next "
                  "safe point, a second Ctrl-C stops (resumable)", highlight=False)
    previous = signal.signal(signal.SIGINT, session.on_sigint)
    try:
        return agent.run(observer=session, between=session)
    finally:
        signal.signal(signal.SIGINT, previous)
