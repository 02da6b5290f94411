"""The `harness export` command (registered in harness/cli.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from harness.cli_common import UNSANDBOXED_HELP, friendly, require_sandbox


def register(app: typer.Typer) -> None:
    @app.command("export")
    @friendly
    def export_command(source: Path = typer.Argument(..., help="A run folder (its best iteration) or a kernel file."),
                       task_file: Path = typer.Option(..., "--task", "-t", help="Task spec (tasks/*.yaml)."),
                       shape: Optional[list[str]] = typer.Option(
                           None, "--shape", metavar="NAME=VALUE,...",
                           help="A shape to export, 'M=4096,N=4096' (repeatable; default: the task's bench shapes)."),
                       out_dir: Path = typer.Option(..., "--out", "-o", help="Folder for the C sources."),
                       verify: bool = typer.Option(False, "--verify", help="Build and run the C test program on a "
                                                   "GPU, judge its outputs, time it (default on a machine with a "
                                                   "GPU)."),
                       no_build: bool = typer.Option(False, "--no-build", help="Write the sources only."),
                       unsandboxed: bool = typer.Option(False, "--unsandboxed", help=UNSANDBOXED_HELP)) -> None:
        """A kernel as C sources, a Makefile and a test program (Triton AOT; CuTe DSL export_to_c). Exit 4: the entry
        cannot be exported."""
        from harness.console import out, say
        from harness.export import export, parse_shape
        from harness.spec import load_task

        task = load_task(task_file)
        require_sandbox(unsandboxed)  # the recording runs the kernel file's code
        shapes = [parse_shape(s, task) for s in shape] if shape else None
        done = export(source, task, out_dir, shapes, build=not no_build)
        for i, v in enumerate(done.variants):
            shapes_text = "; ".join(", ".join(f"{k}={val}" for k, val in s.items()) for s in v.shapes)
            fixed = f" (fixed at the exported shape: {', '.join(v.fixed)})" if v.fixed else ""
            say(f"variant {i}: {shapes_text}: {len(v.launches)} launch(es) of "
                f"{', '.join(sorted({l.kernel for l in v.launches}))}{fixed}")
        say(done.build_note or "not built (--no-build)")
        import torch

        if verify or torch.cuda.is_available():
            from harness.export.verify import verify_export

            rows = verify_export(done, task)
            for r in rows:
                out.print(f"{r['kernel']}  {r['shape']}  max_abs_scaled {r['max_abs_scaled']:.3g}  "
                          f"C {r['c_us']:.2f} us  harness {r['harness_us']:.2f} us (after the C program "
                          f"{r['harness_after_us']:.2f})  ratio {r['ratio']:.3f}  "
                          f"{'ok' if r['ok'] else 'WRONG: ' + r['broken']}")
            if not all(r["ok"] for r in rows):
                from rungs.core.errors import EXIT_FAIL

                raise typer.Exit(EXIT_FAIL)
        out.print(str(done.out_dir))
