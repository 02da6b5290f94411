"""Where a callable's Python code lives, by its code objects' file names (not by `__module__`, which a class sets
for itself): a callable or class that claims to be Triton's or torch's is judged by the files its code comes from.
Used by the interpreter's patch (rungs/backends/triton_lang_patch.py)."""
from __future__ import annotations

import os
import sys
from typing import Any


def code_files(member: Any) -> list[str | None]:
    """A function's file, or a callable object's class's `__call__`'s, and the same for all it wraps (`__wrapped__`)
    and every function its closures hold, however deep (Triton's `builtin` decorator returns a wrapper of its own
    around the decorated function): None for a callable with no Python code to place, or a chain past MAX_WALK."""
    files: list[str | None] = []
    seen: set[int] = set()
    todo = [member]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if len(seen) > MAX_WALK:  # a chain built to outrun the walk: not Triton's
            return [*files, None]
        fn = getattr(item, "__func__", item)  # a bound method, staticmethod or classmethod: its function
        code = getattr(fn, "__code__", None) or getattr(getattr(type(fn), "__call__", None), "__code__", None)
        filename = getattr(code, "co_filename", None)
        files.append(os.path.abspath(filename) if isinstance(filename, str) else None)
        inner = [getattr(fn, "__wrapped__", None)]
        inner += [c.cell_contents for c in getattr(fn, "__closure__", None) or () if _filled(c)]
        todo += [i for i in inner if callable(i) and not isinstance(i, type)]
    return files


MAX_WALK = 256


def package_dir(name: str) -> str | None:
    """The folder of an imported package (with a trailing separator), or None where it is not imported."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if isinstance(path, str) else None


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True
