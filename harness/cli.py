"""The `harness` command: run and check here; the other commands come from the sub-command modules it registers
(steer_cli, task_cli, context_cli, mcp_cli, export/cli, eval_cli), which share harness/cli_common.py with it and never
import this module back. drive() (harness/drive.py) runs the loop once `run` has built the agent.

Every error a user can cause ends in one line on stderr and a documented exit code (rungs/core/errors.py);
an unexpected error also prints one line, with the traceback saved to a file rather than dumped.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
import typer.core
from rich.text import Text

from harness import context_cli, eval_cli, mcp_cli, steer_cli, task_cli
from harness.cli_common import (UNSANDBOXED_HELP, autotune_option, executor_option, friendly, gpus_option,
                                max_gpu_seconds_option, parallel_option, placement, ray_address_option,
                                refuse_parallel_menu, require_sandbox, timeout_option, warn_if_degenerate,
                                writable_folder)
from harness.console import out, say, warning
from harness.drive import drive
from harness.export import cli as export_cli
from harness.live import CheckView, rung_line
from rungs.core.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS, EXIT_UNVERIFIED, BadInput
from harness.spec import load_task
from rungs.core.spec import TaskSpec

if TYPE_CHECKING:
    from rungs.core.result import RungResult

# -h as well as --help, on every command (click passes the setting down to subcommands).
CONTEXT = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True, context_settings=CONTEXT,
                  help="Write GPU kernels with an LLM and check every version with a ladder of rungs.")


def _flags_take_no_value() -> None:
    """typer 0.29 labels every flag `<bool>` in --help, which reads as if `--quiet` wanted a value; and a number
    with a range `<float range> [x>=0.01]`, whose label took a third of the line at 80 columns (the range says it)."""
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)
    if shown is None:  # older typer (the GPU machine's) has no such label to hide
        return

    def display_type_rich(self: typer.core.TyperOption, ctx: Any) -> str | None:
        ranged = getattr(self, "_get_number_range_help_str", lambda: "")()
        return None if self.is_flag or ranged else shown(self, ctx)

    option.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()


def _help_folds_long_words() -> None:
    """rich cuts an option's help word longer than its column with `…` (at 80 columns `openai-compatible:URL:MODEL`
    lost its end): fold such a word onto the next line instead, so the help is whole at any width."""
    from rich.text import Text as RichText

    from typer import rich_utils

    made = getattr(rich_utils, "_get_parameter_help", None)
    if made is None:  # another typer: its help stays as it draws it
        return

    def parameter_help(*args: Any, **kwargs: Any) -> Any:
        cell = made(*args, **kwargs)
        for part in [cell, *getattr(cell, "renderables", [])]:
            if isinstance(part, RichText):
                part.overflow = "fold"
        return cell

    rich_utils._get_parameter_help = parameter_help


_help_folds_long_words()


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("kernel-harness")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        print(f"harness {version()}")
        raise typer.Exit(EXIT_PASS)


@app.callback()
def main_options(show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                                   help="Print the version and exit.")) -> None:
    """Write GPU kernels with an LLM and check every version with a ladder of rungs."""


def with_timeout(task: TaskSpec, timeout_s: float | None, autotune_s: float | None = None) -> TaskSpec:
    given = {k: v for k, v in (("timeout_s", timeout_s), ("autotune_s", autotune_s)) if v is not None}
    return task.model_copy(update=given) if given else task

# Environment variables that hold each provider's key: with none set, `harness run` replays the demo transcript.
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def choose_model(task: TaskSpec, model: str | None) -> str:
    """The model to use: --model; else the task's `model:` when its key is set (or it needs none); else a
    default model of the first provider whose key is set; else the demo transcript."""
    from harness.models import DEFAULT_MODELS

    def key_missing(spec: str) -> str | None:
        var = KEY_VARS.get(spec.partition(":")[0])
        return var if var and not os.environ.get(var) else None

    if model:
        if key_missing(model):
            raise BadInput(f"--model {model}: {key_missing(model)} is not set")
        return DEFAULT_MODELS.get(model, model)
    if task.model and not key_missing(task.model):
        return DEFAULT_MODELS.get(task.model, task.model)
    for provider, var in KEY_VARS.items():
        if os.environ.get(var):
            if task.model:
                say(f"the task's model {task.model} needs {key_missing(task.model)}: using {DEFAULT_MODELS[provider]}")
            return DEFAULT_MODELS[provider]
    if task.transcript:
        path = task.resolve(task.transcript)
        say(f"no API key set: replaying the demo transcript {os.path.relpath(path)} "
            f"(use --model, and see README 'Choosing a model')")
        return f"replay:{path}"
    raise BadInput(f"{task.path}: no --model given, no API key set, and the task has no demo transcript")


@app.command()
@friendly
def run(task_file: Path = typer.Argument(..., help="Task spec (tasks/*.yaml)."),
        model: Optional[str] = typer.Option(None, "--model", "-m", help="anthropic[:MODEL], openai[:MODEL], "
                                            "openai-compatible:URL:MODEL, replay:FILE or human (README 'Choosing a "
                                            "model'); a coding agent as the model: harness mcp TASK."),
        max_iterations: Optional[int] = typer.Option(None, min=1, help="Iteration budget (overrides the task's)."),
        max_minutes: Optional[float] = typer.Option(None, min=0.01, help="Wall-time budget in minutes (overrides "
                                                    "the task's)."),
        timeout_s: Optional[float] = timeout_option(),
        autotune_s: Optional[float] = autotune_option(),
        runs_dir: Path = typer.Option(Path("runs"), help="Where run folders go."),
        dumps_dir: Path = typer.Option(Path("dumps"), help="Where compiler dumps go."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No live view; print only the run folder."),
        interactive: bool = typer.Option(False, "--interactive", "-i", help="A summary and a menu after each "
                                         "iteration (hint, edit, revert, fork, stop); Ctrl-C pauses."),
        candidates: int = typer.Option(1, "--candidates", "-n", min=1, help="Kernels the model writes per "
                                       "iteration (independent calls), each climbing the ladder."),
        strategy: Optional[str] = typer.Option(None, "--strategy", help="Which kernels the next iteration improves "
                                               "on: latest (default with one candidate), greedy (the best; default "
                                               "with several), beam:K (the K best), best-of-n (each from the task "
                                               "alone; the best of all is kept)."),
        profile: Optional[str] = typer.Option(None, "--profile", help="Which timed candidates Nsight Compute "
                                              "profiles and witnesses: all (default with one candidate), or improving "
                                              "(default with several): only those faster than the run's best so far."),
        parallel: int = parallel_option(),
        executor: str = executor_option(),
        ray_address: Optional[str] = ray_address_option(),
        gpus: Optional[str] = gpus_option(),
        max_gpu_seconds: Optional[float] = max_gpu_seconds_option(),
        unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
    """Run the loop on a task until its roofline target or a budget is reached.

    A coding agent (Claude Code, Codex, ...) as the model instead: harness mcp TASK (see harness mcp --help)."""
    from harness.models import load_model
    from harness.search import parse_strategy
    from harness.store import RunStore

    search = parse_strategy(strategy or ("latest" if candidates == 1 else "greedy"))
    profile = profile or ("all" if candidates == 1 else "improving")
    if profile not in ("all", "improving"):
        raise BadInput(f"--profile {profile}: expected all or improving")
    task = with_timeout(load_task(task_file), timeout_s, autotune_s)  # first: a missing file is said before torch loads
    warn_if_degenerate(task)
    climbs, pools = placement(gpus, executor, ray_address, parallel)
    if interactive:
        refuse_parallel_menu(parallel, climbs.name, len(pools))
        __import__("harness.interactive", fromlist=["require_terminal"]).require_terminal()
    sandbox = require_sandbox(unsandboxed)
    spec = choose_model(task, model)
    llm = load_model(spec)
    widths = sorted({w for w in getattr(llm, "rounds", []) if w > 1} - {candidates})
    if widths:  # a replayed round is then split over iterations (or iterations take several rounds' turns)
        warning(f"the transcript's rounds hold {', '.join(map(str, widths))} candidates and --candidates is "
                f"{candidates}: its turns are played in order all the same")
    budgets = task.budgets.overridden({"iterations": max_iterations, "minutes": max_minutes,
                                       "gpu_seconds": max_gpu_seconds})
    writable_folder(runs_dir, "--runs-dir")
    writable_folder(dumps_dir, "--dumps-dir")  # else a good kernel would fail at the dumps rung
    store = RunStore.create(runs_dir, task, spec, budgets.model_dump(), sandbox=sandbox, strategy=search.name,
                            candidates=candidates, gpus=[{"index": p.index, "name": p.name} for p in pools],
                            profile=profile)
    from harness.agent import Agent, AgentConfig  # torch: after the checks, so bad input is said at once

    agent = Agent(task=task, model=llm, store=store, budgets=budgets, dumps_root=dumps_dir, strategy=search,
                  config=AgentConfig(candidates=candidates, parallel=parallel, profile=profile), executor=climbs,
                  gpu_pools=pools)
    drive(agent, interactive, quiet=quiet or spec == "human")  # a person typing needs the terminal, not a live panel


@app.command()
@friendly
def check(task_file: Path = typer.Argument(..., help="Task spec (tasks/*.yaml)."),
          kernel: Path = typer.Argument(..., help="Candidate kernel file."),
          as_json: bool = typer.Option(False, "--json", help="Print the verdict as one JSON object."),
          dumps_dir: Optional[Path] = typer.Option(None, help="Keep compiler dumps here."),
          timeout_s: Optional[float] = timeout_option(),
          autotune_s: Optional[float] = autotune_option(),
          unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
    """One kernel file through the ladder, no model. Exit 0 pass, 1 fail, 2 bad input, 4 compiled but unverified
    (no GPU and no interpreter for the task's DSL). Eager and torch.compile baselines are timed once per GPU, torch
    version, reference and bench shapes, and kept in the harness cache (rungs.ladder.benchmark.shared_cache)."""
    if not kernel.is_file():  # before the task, whose reference imports torch: said in 0.8 s, not 3
        raise BadInput(f"{kernel}: no such kernel file")
    task = with_timeout(load_task(task_file), timeout_s, autotune_s)
    warn_if_degenerate(task)
    require_sandbox(unsandboxed)
    # the ladder imports torch: after the checks, so a task file that does not load is said in 0.8 s, not 3
    from rungs.ladder.ladder import check as climb

    def show(r: "RungResult") -> None:
        out.print(rung_line(r), soft_wrap=True)
        if r.details and r.status != "skip" and r.name in ("correctness", "dumps", "benchmark", "compile", "profile"):
            out.print(Text(r.details), soft_wrap=True)  # tables stay tables in a pipe

    from rungs.sandbox.leftovers import scratch

    with scratch("harness-check-") as tmp, \
            (CheckView(out, show) if out.is_terminal and not as_json else contextlib.nullcontext()) as view:
        on_result = None if as_json else (view.rung_finished if view else show)
        verdict = climb(task, kernel, Path(tmp) / "work", dump_dir=dumps_dir or Path(tmp) / "dumps",
                        on_rung=view.rung_started if view else None, on_result=on_result)
    if as_json:
        sys.stdout.write(verdict.model_dump_json(exclude={"rungs": {"__all__": {"details"}}}) + "\n")
    else:
        for warning in verdict.warnings:  # what this pass could not rule out here (docs/threat-model.md)
            out.print(Text(f"warning: {warning}"))
        out.print(Text(f"verdict: {verdict.verdict}" + (f" (failed at {verdict.failed_rung})" if verdict.failed_rung
                                                         else "")
                       + (f" [{verdict.sandbox}]" if verdict.sandbox.startswith("UNSANDBOXED") else "")))
    raise typer.Exit({"pass": EXIT_PASS, "unverified": EXIT_UNVERIFIED}.get(verdict.verdict, EXIT_FAIL))


app.add_typer(context_cli.context_app, name="context")
app.add_typer(task_cli.task_app, name="task")
steer_cli.register(app)  # steer, resume, fork, diff, report, runs
mcp_cli.register(app)  # mcp: the tools served to a coding agent
export_cli.register(app)  # export: a kernel as C sources (Triton AOT)
eval_cli.register(app)  # eval: a KernelBench suite, fast_p


def main() -> None:  # pragma: no cover - console script entry (`harness`, `python -m harness.cli`)
    """The CLI, then the process's end without the interpreter's teardown (rungs/core/exit.py: 0.9 CPU-s a command
    once torch is imported), after what an exit does for it."""
    from rungs.core.exit import exit_now

    try:
        app()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    exit_now(code)


if __name__ == "__main__":  # pragma: no cover
    main()


__all__ = ["app", "EXIT_BAD_INPUT", "EXIT_FAIL"]
