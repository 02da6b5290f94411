"""`harness context ...`: register, index, list and search the context directories the model may search."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from harness.cli_common import friendly
from harness.console import out
from rungs.core.errors import BadInput

context_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                          help="Context directories the model may search (PTX headers, Triton, CuTe DSL, CUTLASS, "
                               "any folder).")


def _say(text: str) -> None:
    from harness.console import say

    say(text)


@context_app.command("add")
@friendly
def add_cmd(name: str = typer.Argument(..., help="Context name, used in a task's `context:` list."),
            path: Optional[Path] = typer.Argument(None, help="Folder (or file) to index; leave out for a built-in "
                                                  "source: ptx, triton, cute-dsl, cutlass.")) -> None:
    """Register a folder under a name and index it (or fill and index a built-in source)."""
    from harness import context

    t0 = time.monotonic()
    entry = context.add(name, path)
    print(f"indexed {entry.name}: {entry.files} files, {entry.chunks} chunks in {time.monotonic() - t0:.1f} s "
          f"({entry.path})")


@context_app.command("index")
@friendly
def index_cmd(name: Optional[str] = typer.Argument(None, help="Context to re-index (all when left out).")) -> None:
    """Rebuild the search index of one context, or of all (after the folder changed)."""
    from harness import context

    registry = context.Registry()
    names = [name] if name else sorted(registry.entries())
    if not names:
        raise BadInput("no context directories registered; add one: `harness context add ptx` (or triton, cute-dsl, "
                       "cutlass), or `harness context add NAME PATH`")
    for n in names:
        t0 = time.monotonic()
        entry = context.index(n, registry)
        print(f"indexed {entry.name}: {entry.files} files, {entry.chunks} chunks in {time.monotonic() - t0:.1f} s")


@context_app.command("list")
@friendly
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print the registry as JSON.")) -> None:
    """The registered contexts, and the built-in sources that can fill one."""
    from harness import context

    entries = context.Registry().entries()
    if as_json:
        sys.stdout.write(json.dumps({n: e.model_dump() for n, e in entries.items()}, indent=2) + "\n")
        return
    table = Table(title=f"contexts ({context.Registry().file})", title_justify="left")
    for col in ("name", "source", "files", "chunks", "indexed", "path"):
        table.add_column(col)
    for e in entries.values():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.indexed_at)) if e.indexed_at else "never"
        table.add_row(e.name, e.source, str(e.files), str(e.chunks), when, e.path)
    if entries:
        out.print(table)
    else:
        out.print("no context directories registered")
    out.print("built-in sources (`harness context add NAME`): "
              + "; ".join(f"{n}: {desc}" for n, (desc, _) in context.SOURCES.items()), highlight=False)


@context_app.command("search")
@friendly
def search_cmd(query: str = typer.Argument(..., help="Keywords or an identifier, e.g. 'cp.async.bulk.tensor'."),
               name: Optional[List[str]] = typer.Option(None, "--name", "-n", help="Only this context (repeatable)."),
               k: int = typer.Option(5, "-k", help="How many hits."),
               lines: int = typer.Option(30, help="Lines shown per hit."),
               as_json: bool = typer.Option(False, "--json", help="Hits as JSON lines.")) -> None:
    """Search the context directories (the built-in local sources are indexed on first use)."""
    from harness import context

    registry = context.Registry()
    wanted = list(name or [])
    if not wanted and not registry.entries():
        wanted = list(context.LOCAL_SOURCES)  # first use: whatever this machine can fill by itself
        problems = context.ensure(wanted, registry, say=_say)
        wanted = [n for n in wanted if n in registry.entries()]
        if not wanted:
            raise BadInput("nothing to search: " + "; ".join(problems))
    else:
        problems = context.ensure(wanted, registry, say=_say)
        if problems:
            raise BadInput("; ".join(problems))
    hits = context.search(query, wanted or None, k, registry)
    if as_json:
        for h in hits:
            sys.stdout.write(json.dumps({**h.model_dump(), "ref": h.ref}) + "\n")
        return
    print(context.format_hits(hits, max_lines=lines, max_chars=10**9))
