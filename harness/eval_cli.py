"""The `harness eval` command: a progress bar over the problems, then the table and the suite's scores."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from harness.cli_common import UNSANDBOXED_HELP, friendly, require_sandbox
from harness.console import err, out, say, warning
from rungs.core.errors import BadInput


COLUMNS = (("problem", "problem", False), ("verdict", "verdict", False), ("failed", "failed", False),
           ("s", "seconds", True), ("us", "runtime", True), ("x eager", "x_eager", True),
           ("x compile", "x_compile", True), ("roofline", "roofline", True), ("reason", "reason", False))


def plain_table(rows: list[dict[str, str]]) -> str:
    """The table as fixed-width text, for a pipe or a log (rich would fold it to 80 columns)."""
    shown = [{k: (r[k][:120] if k == "reason" else r[k]) for _, k, _ in COLUMNS} for r in rows]
    widths = {k: max([len(title)] + [len(r[k]) for r in shown]) for title, k, _ in COLUMNS}
    def line(cells: dict[str, str]) -> str:
        return "  ".join(cells[k].rjust(widths[k]) if right else cells[k].ljust(widths[k])
                         for _, k, right in COLUMNS).rstrip()
    return "\n".join([line({k: title for title, k, _ in COLUMNS}), *(line(r) for r in shown)])


def print_table(rows: list[dict[str, str]], summary: dict[str, Any]) -> None:
    from harness.eval import fast_lines

    if not out.is_terminal:
        print(plain_table(rows))
        rows = []
    table = Table(show_lines=False, pad_edge=False)
    for col, _, right in COLUMNS:
        table.add_column(col, justify="right" if right else "left", overflow="fold")
    for r in rows:
        table.add_row(*(r[k][:160] if k == "reason" else r[k] for _, k, _ in COLUMNS))
    if rows:
        out.print(table)
    for line in fast_lines(summary):
        out.print(line, highlight=False)
    for key, label in (("geomean_speedup_eager", "eager"), ("geomean_speedup_compile", "torch.compile")):
        value = summary[key]
        out.print(f"geomean speedup over {label}: {'-' if value is None else value}", highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("eval")
    @friendly
    def eval_command(problems: list[str] = typer.Argument(..., help="Problem files, folders (searched below), globs "
                                                           "or list files (one path a line)."),
                     solutions: Optional[Path] = typer.Option(None, "--solutions", help="Folder of solutions, "
                                                              "<problem stem>.py each."),
                     model: Optional[str] = typer.Option(None, "--model", "-m", help="Run the loop on each problem "
                                                         "with this model (as `harness run --model`)."),
                     dsl: str = typer.Option("triton", "--dsl", help="DSL the solutions are written in."),
                     precision: str = typer.Option("fp32", "--precision", help="fp32 | bf16 | fp16: the problems' "
                                                   "float inputs and weights cast to it, reference and solution "
                                                   "alike, judged with KernelBench's tolerance for it."),
                     jobs: int = typer.Option(1, "-j", "--jobs", min=1, help="Problems checked side by side (own "
                                              "processes). On one GPU their compiles overlap and their timings "
                                              "take turns (a per-GPU lock); each needs its GPU memory at once."),
                     evals_dir: Path = typer.Option(Path("evals"), "--evals-dir", help="Where eval folders go."),
                     eval_id: Optional[str] = typer.Option(None, "--id", help="Eval folder name (default: from the "
                                                           "arguments, so the same command resumes)."),
                     fresh: bool = typer.Option(False, "--fresh", help="Start over instead of resuming."),
                     timeout_s: Optional[float] = typer.Option(None, "--timeout-s", min=1.0, help="Seconds one "
                                                               "worker process may take."),
                     unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
        """KernelBench problems through the ladder: per problem verdict, speedups and roofline; fast_p for the suite."""
        from harness.eval import Eval, ProblemResult, eval_id as make_id, find_problems, table_rows
        from rungs.core.spec import PRECISIONS
        from rungs.backends import names as dsl_names

        if (solutions is None) == (model is None):
            raise BadInput("give one of --solutions DIR or --model SPEC")
        if solutions is not None and not solutions.is_dir():
            raise BadInput(f"--solutions {solutions}: no such folder")
        if dsl not in dsl_names():
            raise BadInput(f"--dsl {dsl}: unknown DSL (known: {', '.join(dsl_names())})")
        if precision not in PRECISIONS:
            raise BadInput(f"--precision {precision}: unknown precision (known: {', '.join(PRECISIONS)})")
        found = find_problems(problems)
        require_sandbox(unsandboxed)
        folder = evals_dir / (eval_id or make_id(found, solutions, model, dsl, precision))
        if fresh and (folder / "results.jsonl").is_file():
            (folder / "results.jsonl").unlink()
        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=err, transient=False)
        bar: dict[str, Any] = {}

        def started(done: int, todo: int) -> None:
            if done:
                say(f"resuming {folder}: {done} of {done + todo} problems done")
            bar["id"] = progress.add_task("eval", total=done + todo, completed=done)

        def finished(result: ProblemResult) -> None:
            progress.update(bar["id"], advance=1, description=f"{result.problem}: {result.verdict}")
            if not err.is_terminal:
                say(f"{result.problem}: {result.verdict}" + (f" at {result.failed_rung}" if result.failed_rung else "")
                    + f" ({result.seconds:.1f} s)")

        run = Eval(problems=found, folder=folder, solutions=solutions, model=model, dsl=dsl, precision=precision,
                   jobs=jobs, timeout_s=timeout_s, on_start=started, on_done=finished)
        with progress:
            summary = run.run()
        from harness.eval import read_results

        done = read_results(folder)
        results = [done[p.stem] for p in found if p.stem in done]
        for r in results:
            for note in r.notes:
                warning(f"{r.problem}: {note}")
        print_table(table_rows(results), summary)
        out.print(f"eval folder: {folder} (report.md, report.html, summary.json)", highlight=False)
