"""`harness mcp TASK [--run RUN] ...`: serve a run's tools over MCP on stdio (harness/mcp_server.py).

A new run unless --run names one to go on with (as `harness resume` does: finished iterations kept, the one in
flight redone, budgets going on from what was spent). Bad input exits 2 with one line on stderr before the
server starts; a client that disconnects ends it with 0; a loop that died on an internal error, 3.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Optional

import typer

from harness.cli_common import (UNSANDBOXED_HELP, friendly, open_run, require_sandbox, warn_if_degenerate,
                                writable_folder, writable_run)
from rungs.core.errors import EXIT_RUN_ERROR, BadInput


def register(app: typer.Typer) -> None:
    @app.command()
    @friendly
    def mcp(task_file: Path = typer.Argument(..., help="Task spec (tasks/*.yaml)."),
            run: Optional[str] = typer.Option(None, "--run", help="Go on with this run (folder or id) instead of "
                                              "starting one."),
            max_iterations: Optional[int] = typer.Option(None, help="Iteration budget (of the whole run)."),
            max_minutes: Optional[float] = typer.Option(None, help="Wall-time budget in minutes (of the whole run)."),
            runs_dir: Path = typer.Option(Path("runs"), help="Where run folders go (and a RUN id is looked up)."),
            dumps_dir: Optional[Path] = typer.Option(None, help="Where compiler dumps go (default: dumps/, or the "
                                                     "run's)."),
            unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
        """Serve the harness's tools over MCP (stdio) to a coding agent: each submit_kernel is one iteration."""
        import anyio

        from harness.agent import Agent
        from harness.mcp_server import McpRun, serve
        from harness.models.mcp_bridge import McpModel
        from harness.resume import resume_agent
        from harness.spec import load_task
        from harness.store import RunStore

        task = load_task(task_file)
        warn_if_degenerate(task)
        sandbox = require_sandbox(unsandboxed)
        overrides = {"iterations": max_iterations, "minutes": max_minutes}
        bridge = McpModel()
        if run:
            store = open_run(run, runs_dir)
            writable_run(store)
            writable_folder(dumps_dir or Path(store.info().dumps_dir or "dumps"), "--dumps-dir")
            info = store.info()
            if info.task.get("name") != task.name:
                raise BadInput(f"--run {run}: a run of task {info.task.get('name')!r}, not {task.name!r} "
                               f"({task_file})")
            if info.sandbox != sandbox:  # what isolated each iteration stays on record
                store.write_info(info.model_copy(update={"sandbox": f"{info.sandbox}; resumed with: {sandbox}"}))
            make = partial(resume_agent, store, model="mcp", llm=bridge, budgets=overrides, dumps_root=dumps_dir)
        else:
            budgets = task.budgets.overridden(overrides)
            writable_folder(runs_dir, "--runs-dir")
            writable_folder(dumps_dir or Path("dumps"), "--dumps-dir")
            store = RunStore.create(runs_dir, task, "mcp", budgets.model_dump(), sandbox=sandbox)
            make = partial(Agent, task=task, model=bridge, store=store, budgets=budgets,
                           dumps_root=dumps_dir or Path("dumps"))
        served = McpRun(make, bridge)  # the agent is built here, with the server's toolbox and config
        store.write_info(store.info().model_copy(update={"live_steering": True}))
        typer.echo(f"harness mcp: serving run {store.root} on stdio (steer it with `harness steer {store.root} "
                   f"--hint TEXT`)", err=True)
        anyio.run(serve, served)
        if served.failed:
            raise typer.Exit(EXIT_RUN_ERROR)
