"""drive(): what `harness run` does once the agent is built (and `harness resume` once it is rebuilt): the loop
with the menu, the live view or quietly, then where it ended and the exit code."""
from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from harness.console import out
from rungs.core.errors import EXIT_INTERRUPTED, EXIT_RUN_ERROR

if TYPE_CHECKING:
    from harness.agent import Agent


def drive(agent: "Agent", interactive: bool, quiet: bool) -> None:
    """Run the loop with the menu, the live view or quietly; print where it ended (as `harness run` does). Exits 3
    on a run that stopped on an error, 130 on one stopped by Ctrl-C (README, Exit codes)."""
    from harness.agent import INTERRUPTED, QuietObserver
    from harness.live import LiveView, PlainProgress

    if interactive:
        from harness.interactive import run_interactive

        stop = run_interactive(agent, out)
    elif quiet:
        stop = agent.run(QuietObserver())
    elif not out.is_terminal:  # a pipe or a log: plain lines as the run goes, never minutes of silence
        stop = agent.run(PlainProgress())
    else:
        with LiveView(out, f"{agent.task.name} · {agent.model.name.split('/')[-1]} · {agent.store.root}") as view:
            stop = agent.run(view)
    if stop.reason == INTERRUPTED:
        # What is left is printing and the process's end (the pool's threads joined, files closed): a second Ctrl-C
        # that lands there still exits 130, never as a process killed by SIGINT; and a Ctrl-C that landed in an
        # import's generated dataclass code no longer makes CPython kill the process with SIGINT at exit.
        from harness.cli_common import exit_on_another_ctrl_c

        exit_on_another_ctrl_c()
    best = agent.store.best()
    print(f"stopped: {stop.reason}")
    print(f"best: iteration {best.iteration}" if best else "best: no passing kernel")
    print(f"report: {agent.store.root / 'report.html'} (and report.md beside it)")  # written as the run stopped
    print(f"run folder: {agent.store.root}")
    if stop.status == "error":
        raise typer.Exit(EXIT_RUN_ERROR)
    if stop.reason == INTERRUPTED:
        raise typer.Exit(EXIT_INTERRUPTED)
