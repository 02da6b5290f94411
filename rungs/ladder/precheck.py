"""Static precheck: the candidate parses, defines the entry, and is written in the task's DSL.

Nothing here runs candidate code. Known cheating patterns are refused by rungs/ladder/static_checks.py.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from rungs import backends
from rungs.core.result import RungResult

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb
from rungs.ladder.static_checks import screen

def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def imported_modules(tree: ast.Module) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
    return mods


def precheck(source: str, path: Path, entry: str, dsl: str, static_checks: bool = True) -> RungResult:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return RungResult(name="precheck", status="fail",
                          message=f"syntax error at line {exc.lineno}: {exc.msg}: {(exc.text or '').strip()[:120]}")
    if entry not in defined_names(tree):
        return RungResult(name="precheck", status="fail",
                          message=f"the file defines no top-level '{entry}' (the task's entry point)")
    try:
        backend = backends.get(dsl)
    except backends.UnknownBackend as exc:
        return RungResult(name="precheck", status="fail", message=str(exc))
    module, decorators = backend.markers.module, backend.markers.decorators
    mods = imported_modules(tree)
    if not any(m == module or m.startswith(module + ".") for m in mods):
        return RungResult(name="precheck", status="fail",
                          message=f"the file never imports {module}: a {backend.label} kernel is required")
    marks = {_dotted(d) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))
             for d in n.decorator_list} | {_dotted(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    if not marks & set(decorators):
        return RungResult(name="precheck", status="fail",
                          message=f"no {backend.label} kernel found (expected one of: "
                                  f"{', '.join('@' + d for d in decorators)})")
    findings = screen(tree) if static_checks else []
    if findings:
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        return RungResult(name="precheck", status="fail", metrics={"static_findings": len(findings)},
                          message=f"refused: {findings[0].message()}{more}",
                          details="\n".join(f"[{f.rule}] {f.message()}" for f in findings))
    return RungResult(name="precheck", status="ok", message=f"{len(source.splitlines())} lines, entry '{entry}' defined")


def rung(climb: "Climb") -> RungResult:
    if not climb.kernel.is_file():
        return RungResult(name="precheck", status="fail", message=f"kernel file {climb.kernel} not found")
    return precheck(climb.kernel.read_text(), climb.kernel, climb.task.entry, climb.task.dsl, climb.static_checks)
