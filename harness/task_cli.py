"""`harness task ...`: write a task from a template, and check a task without any kernel.

    harness task new NAME [--dir tasks]   # NAME.yaml, NAME_ref.py and a correct starter kernel NAME_kernel.py
    harness task check TASK               # the spec, the input maker and the reference on every test shape,
                                          # the degenerate-task guard, the roofline terms; no kernel needed
"""
from __future__ import annotations

import math
import re
import time
from pathlib import Path
from string import Template
from typing import Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from harness.cli_common import friendly
from harness.console import make_console, out, say, warning
from rungs.core.errors import EXIT_FAIL, BadInput

task_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                       help="Write a task from a template, or check a task without a kernel.")
TEMPLATES = Path(__file__).resolve().parent / "templates"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{list(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    return type(value).__name__


@task_app.command("new")
@friendly
def new_cmd(name: str = typer.Argument(..., help="Task name: lower case, digits and _ (a Python identifier)."),
            into: Path = typer.Option(Path("tasks"), "--dir", help="Folder the three files go in."),
            force: bool = typer.Option(False, "--force", help="Overwrite files that exist.")) -> None:
    """Write NAME.yaml (commented), NAME_ref.py (reference and input maker) and NAME_kernel.py (a correct starter
    Triton kernel) from a template: `harness task check` and `harness check` pass them as written."""
    if not NAME.match(name):
        raise BadInput(f"task name {name!r}: use lower case letters, digits and _, starting with a letter")
    files = {into / f"{name}.yaml": "task.yaml.tmpl", into / f"{name}_ref.py": "ref.py.tmpl",
             into / f"{name}_kernel.py": "kernel.py.tmpl"}
    existing = [str(p) for p in files if p.exists()]
    if existing and not force:
        raise BadInput(f"{', '.join(existing)} exist(s): choose another name, or --force to overwrite")
    into.mkdir(parents=True, exist_ok=True)
    for path, template in files.items():
        text = Template((TEMPLATES / template).read_text()).substitute(name=name, dir=into.as_posix())
        path.write_text(text)
        print(f"wrote {path}")
    print(f"next: harness task check {into / (name + '.yaml')}")
    print(f"      harness check {into / (name + '.yaml')} {into / (name + '_kernel.py')}")


@task_app.command("check")
@friendly
def check_cmd(task_file: Path = typer.Argument(..., help="Task spec (tasks/*.yaml)."),
              seeds: Optional[int] = typer.Option(None, min=1, help="Cases per shape and dtype (default: the "
                                                  "task's seeds).")) -> None:
    """Validate a task without a kernel: the spec, the input maker and the reference on every test shape, dtype
    and seed, the degenerate-task guard and the roofline terms. Exit 0 ok, 1 the task is weak (warnings), 2 bad."""
    import torch

    from harness.spec import load_task
    from rungs.ladder.cases import TORCH_DTYPES, degenerate_warnings, make_cases

    task = load_task(task_file)
    t0 = time.monotonic()
    cases = make_cases(task, task.shapes.checked(), seeds or task.seeds, with_reference=True)
    made_s = time.monotonic() - t0
    table = Table(title=Text(f"{task.name}: test cases (the reference ran on float64 copies of the inputs)"),
                  title_justify="left")
    for col in ("case", "shape / dtype / seed / distribution", "inputs", "reference output"):
        table.add_column(col, overflow="fold")
    counts = set()
    notes: list[str] = []
    for case in cases:
        refs = case.reference or []
        counts.add(len(refs))
        for i, v in enumerate(case.inputs):
            if isinstance(v, torch.Tensor) and v.is_floating_point() and v.dtype != TORCH_DTYPES[case.dtype]:
                raise BadInput(f"{task.where('inputs')}: {task.inputs} returned input {i} as {v.dtype} for dtype "
                               f"{case.dtype}, for shape {case.shape}: make it dtype (a torch.dtype argument)")
            if isinstance(v, torch.Tensor) and v.device.type != "cpu":
                raise BadInput(f"{task.where('inputs')}: {task.inputs} returned input {i} on {v.device}, for shape "
                               f"{case.shape}: make inputs on the CPU (the ladder moves them)")
        bad = [task.output_name(i, len(refs)) for i, r in enumerate(refs) if not torch.isfinite(r).all()]
        if bad:
            notes.append(f"case {case.id} ({case.label()}): {', '.join(bad)} of the reference hold NaN/Inf: "
                         "a kernel must return the same values there")
        table.add_row(case.id, case.label(), "; ".join(_describe(v) for v in case.inputs),
                      "; ".join(_describe(r) for r in refs))
    if len(counts) > 1:
        raise BadInput(f"{task.where('reference')}: {task.reference} returns {sorted(counts)} outputs on different "
                       "shapes: it must return the same number on every shape")
    count = counts.pop() if counts else 0
    if task.outputs and len(task.outputs) != count:
        raise BadInput(f"{task.where('outputs')}: names {len(task.outputs)} output(s), the reference returns {count}")
    (out if out.is_terminal else make_console(width=200)).print(table)
    for shape in task.shapes.bench:
        flops, nbytes = task.floor_terms(shape)
        intensity = f"{flops / nbytes:.3g} FLOP/byte" if nbytes else "no bytes"
        print(f"bench {' '.join(f'{k}={v}' for k, v in shape.items())}: {flops:.4g} FLOPs, {nbytes:.4g} bytes "
              f"({intensity})" + ("" if math.isfinite(flops) and math.isfinite(nbytes) else ": not finite"))
    for note in notes:
        say(f"note: {note}")
    weak = degenerate_warnings(task)
    for text in weak:
        warning(f"{task_file.name}: {text}")
    print(f"{len(cases)} cases on {len(task.shapes.checked())} test shapes made and referenced in {made_s:.1f} s; "
          f"{len(task.shapes.bench)} bench shape(s)")
    if weak:
        print(f"task check: {len(weak)} warning(s): a kernel that ignores its inputs could pass this task")
        raise typer.Exit(EXIT_FAIL)
    print(f"task check: ok ({task_file})")
