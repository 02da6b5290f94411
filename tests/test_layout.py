"""The package layout: rungs/ (verification) imports nothing from harness/ (orchestration), rungs/core/ (the bottom
floor) nothing from the rest of rungs/, the sandboxed worker's modules nothing that needs pydantic, and the `harness`
command's sub-command modules nothing from harness/cli.py (which registers them)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (imports inside functions count: they run too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _offenders(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{p.relative_to(ROOT)}: {m}" for p in folder.rglob("*.py") for m in _imports(p)
                  if m in forbidden or m.startswith(tuple(f + "." for f in forbidden)))


def test_rungs_import_nothing_from_harness() -> None:
    assert _offenders(ROOT / "rungs", ("harness",)) == []


def test_core_imports_nothing_above_it() -> None:
    found = [o for o in _offenders(ROOT / "rungs" / "core", ("rungs",)) if not o.split(": ")[1].startswith("rungs.core")]
    assert found == []


def test_no_sub_command_module_imports_the_cli() -> None:
    """harness/cli.py registers the sub-command modules (steer, task, eval, context, mcp, export); they take the
    shared options and helpers from harness/cli_common.py, never from cli.py back (no cycle). No other module of
    harness/ imports it either: it is the top."""
    harness = ROOT / "harness"
    modules = sorted(p for p in harness.rglob("*.py") if p != harness / "cli.py")
    subs = {harness / f"{n}_cli.py" for n in ("steer", "task", "eval", "context", "mcp")} | {harness / "export/cli.py"}
    assert subs <= set(modules), subs - set(modules)
    found = sorted(f"{p.relative_to(ROOT)}: {m}" for p in modules for m in _imports(p)
                   if m == "harness.cli" or m.startswith("harness.cli."))
    assert found == []


def test_the_finder_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    """The checks above are not vacuous: an import of harness inside a function is found."""
    (tmp_path / "x.py").write_text("def f():\n    from harness.agent import run\n")
    assert {"harness.agent", "harness.agent.run"} <= _imports(tmp_path / "x.py")


def test_no_import_cycle_and_a_bare_worker() -> None:
    """Importing rungs (every module) loads no harness module; the worker's modules load no pydantic."""
    code = ("import sys, pkgutil, importlib, rungs\n"
            "import rungs.worker.loop, rungs.worker.sections_target, rungs.backends\n"
            "assert 'pydantic' not in sys.modules, 'the worker imports pydantic'\n"
            "for m in pkgutil.walk_packages(rungs.__path__, 'rungs.'):\n"
            "    importlib.import_module(m.name)\n"
            "bad = sorted(n for n in sys.modules if n == 'harness' or n.startswith('harness.'))\n"
            "assert not bad, bad\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
