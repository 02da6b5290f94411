"""Commands on saved runs, no terminal needed: steer, resume, fork, diff, report, runs.

    harness steer RUN --hint "use -inf for masked lanes"   # journaled; the next resume's first prompt carries it
    harness steer RUN --revert 3                           # the next iteration improves on iteration 3
    harness resume RUN [--from-iter K] [--interactive]     # go on after a stop, a crash or kill -9
    harness fork RUN K                                     # a new run with iterations 1..K (parent RUN@K)
    harness diff RUN A B                                   # unified diff of two iterations' kernels
    harness report RUN                                     # rebuild report.md and report.html from events.jsonl
    harness runs [--runs-dir DIR] [--json]                 # every run: task, model, status, iterations, best

RUN is a run folder, or a run id under --runs-dir. Each command is a function of its own; `register(app)` adds them to
the `harness` command (harness/cli.py). drive() (harness/drive.py) runs the loop for resume as for `harness run`.
"""
from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from harness.cli_common import (UNSANDBOXED_HELP, executor_option, friendly, gpus_option, max_gpu_seconds_option,
                                open_run, parallel_option, placement, ray_address_option, refuse_parallel_menu,
                                require_sandbox, writable_folder, writable_run)
from harness.console import err, make_console, out
from harness.drive import drive
from rungs.core.errors import BadInput

if TYPE_CHECKING:
    from harness.store import RunStore


def short_model(spec: str) -> str:
    provider, _, rest = spec.partition(":")
    return f"{provider}:{Path(rest).name}" if provider == "replay" else spec


def run_row(store: "RunStore") -> dict[str, Any]:
    info = store.info()
    iterations = store.iterations()
    best = store.best()
    return {"id": store.id, "path": str(store.root), "task": info.task.get("name", ""), "model": info.model,
            "status": store.display_status(), "iterations": len(iterations),
            "best_iteration": best.iteration if best else None,
            "best_runtime_us": best.verdict.metric("runtime_us") if best else None,
            "best_roofline_fraction": best.verdict.metric("roofline_fraction") if best else None,
            "parent": info.parent, "created": info.created}


RUNS_OPT = typer.Option(Path("runs"), "--runs-dir", help="Where run folders are (for a RUN given by id).")


@friendly
def steer(run: str = typer.Argument(..., help="Run folder or id."),
          hint: Optional[list[str]] = typer.Option(None, "--hint", help="A hint for the model's next prompt "
                                                   "(repeatable)."),
          revert_to: Optional[int] = typer.Option(None, "--revert", help="The next iteration improves on "
                                                  "this iteration's kernel."),
          runs_dir: Path = RUNS_OPT) -> None:
    """Steer a saved run: the next `harness resume` picks it up."""
    from harness.resume import played_out, refuse_if_running, revert
    from harness.events import Steered
    from harness.report import write_report

    store = open_run(run, runs_dir)
    if not hint and revert_to is None:
        raise BadInput("steer: give --hint TEXT and/or --revert K")
    refuse_if_running(store, live_ok=True)
    writable_run(store)
    live = store.running_pid()  # a live `harness mcp` reads the journal as it goes
    if any(not text.strip() for text in hint or []):
        raise BadInput("--hint: empty hint")
    if revert_to is not None:
        revert(store, revert_to)
        print(f"reverted: the next iteration improves on iteration {revert_to}")
    for text in hint or []:
        store.journal.append(Steered(action="hint", text=text.strip()))
        print(f"hint saved: {'the next tool result' if live else 'the next prompt'} carries it "
              f"({text.strip()[:60]})")
    if live:
        print(f"the run is live (harness mcp, pid {live}): its MCP client gets this with its next tool call")
    else:
        write_report(store)
        if played_out(store):
            print(f"the run's replay transcript has no more answers: go on with another model: "
                  f"harness resume {store.root} --model SPEC")
        else:
            print(f"go on with: harness resume {store.root}")


@friendly
def resume(run: str = typer.Argument(..., help="Run folder or id."),
           from_iter: Optional[int] = typer.Option(None, "--from-iter", help="Improve on this iteration's "
                                                   "kernel (later iterations are kept in the journal)."),
           model: Optional[str] = typer.Option(None, "--model", "-m", help="Another model spec than the run's."),
           max_iterations: Optional[int] = typer.Option(None, help="New iteration budget (of the whole run)."),
           max_minutes: Optional[float] = typer.Option(None, help="New wall-time budget (of the whole run)."),
           dumps_dir: Optional[Path] = typer.Option(None, help="Where compiler dumps go (default: the run's)."),
           interactive: bool = typer.Option(False, "--interactive", "-i", help="The menu after each iteration."),
           quiet: bool = typer.Option(False, "--quiet", "-q", help="No live view."),
           runs_dir: Path = RUNS_OPT,
           parallel: int = parallel_option(),
           executor: str = executor_option(),
           ray_address: Optional[str] = ray_address_option(),
           gpus: Optional[str] = gpus_option(),
           max_gpu_seconds: Optional[float] = max_gpu_seconds_option(),
           unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
    """Go on with a stopped or crashed run, from its journal (the iteration in flight is redone)."""
    from harness.resume import resume_agent

    climbs, pools = placement(gpus, executor, ray_address, parallel)
    store = open_run(run, runs_dir)
    writable_run(store)
    sandbox = require_sandbox(unsandboxed)
    info = store.info()
    writable_folder(dumps_dir or Path(info.dumps_dir or "dumps"), "--dumps-dir")
    if info.sandbox != sandbox:  # what isolated each iteration stays on record
        store.write_info(info.model_copy(update={"sandbox": f"{info.sandbox}; resumed with: {sandbox}"}))
    if interactive:
        from harness.interactive import require_terminal

        refuse_parallel_menu(parallel, climbs.name, len(pools))
        require_terminal()
    agent = resume_agent(store, model=model, dumps_root=dumps_dir, from_iteration=from_iter,
                         budgets={"iterations": max_iterations, "minutes": max_minutes,
                                  "gpu_seconds": max_gpu_seconds}, parallel=parallel, executor=climbs,
                         gpu_pools=pools)
    print(f"resuming {store.root} at iteration {agent.iteration + 1}")
    drive(agent, interactive, quiet)


@friendly
def fork_cmd(run: str = typer.Argument(..., help="Run folder or id."),
             iteration: int = typer.Argument(..., help="Keep iterations 1..K."),
             into: Optional[Path] = typer.Option(None, help="Runs folder for the new run (default: beside it)."),
             runs_dir: Path = RUNS_OPT) -> None:
    """A new run holding iterations 1..K of RUN (run.json: parent 'RUN@K'); resume it to go on."""
    from harness.resume import fork

    store = open_run(run, runs_dir)
    writable_folder(into or store.root.parent, "--into")
    child = fork(store, iteration, runs_dir=into)
    print(f"forked: {child.root} (parent {child.info().parent})")
    print(f"go on with: harness resume {child.root}")


@friendly
def diff(run: str = typer.Argument(..., help="Run folder or id."),
         a: int = typer.Argument(..., help="Iteration A."), b: int = typer.Argument(..., help="Iteration B."),
         runs_dir: Path = RUNS_OPT) -> None:
    """Unified diff between the kernels of two iterations."""
    store = open_run(run, runs_dir)
    text = "".join(difflib.unified_diff(store.kernel_of(a).splitlines(keepends=True),
                                        store.kernel_of(b).splitlines(keepends=True),
                                        f"iter-{a:03d}/kernel.py", f"iter-{b:03d}/kernel.py"))
    if not text:
        print(f"iterations {a} and {b} have the same kernel")
    elif out.is_terminal:
        out.print(Syntax(text, "diff", theme="ansi_dark"))
    else:
        sys.stdout.write(text)


@friendly
def report(run: str = typer.Argument(..., help="Run folder or id."), runs_dir: Path = RUNS_OPT) -> None:
    """Rebuild report.md and report.html from the run's events.jsonl."""
    from harness.report import write_report

    for path in write_report(open_run(run, runs_dir)):
        print(path)


@friendly
def runs(runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="Where run folders are."),
         as_json: bool = typer.Option(False, "--json", help="One JSON object per line.")) -> None:
    """Every run: task, model, status, iterations, best runtime and roofline fraction."""
    from harness.store import RunStore

    if not runs_dir.is_dir():
        raise BadInput(f"{runs_dir}: no such folder")
    rows = []
    for d in sorted(runs_dir.iterdir()):
        if (d / "run.json").is_file():
            try:
                rows.append(run_row(RunStore.open(d)))
            except ValueError as exc:  # a damaged run.json: say so, list the others
                err.print(Text(f"{d}: unreadable run.json ({exc.__class__.__name__})"))
    if as_json:
        for row in rows:
            print(json.dumps(row))
        return
    if not rows:
        print(f"no runs in {runs_dir}")
        return
    table = Table(title=f"runs in {runs_dir}", title_justify="left")
    for col in ("run", "task", "model", "status", "iters", "best", "runtime_us", "roofline", "parent"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["id"], r["task"], short_model(r["model"]), r["status"], str(r["iterations"]),
                      str(r["best_iteration"] or "-"),
                      f"{r['best_runtime_us']:.1f}" if r["best_runtime_us"] is not None else "-",
                      f"{r['best_roofline_fraction']:.1%}" if r["best_roofline_fraction"] is not None else "-",
                      r["parent"] or "")
    (out if out.is_terminal else make_console(width=200)).print(table)


def register(app: typer.Typer) -> None:
    """Add steer, resume, fork, diff, report and runs to the `harness` command (harness/cli.py)."""
    for name, command in (("steer", steer), ("resume", resume), ("fork", fork_cmd), ("diff", diff),
                          ("report", report), ("runs", runs)):
        app.command(name)(command)
