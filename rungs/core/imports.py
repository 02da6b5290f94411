"""Import a task's own Python file (reference, input maker) by path, once per process.

Standard library only: the worker and the baseline process use it too, and they must start without pydantic.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_file(path: str | Path) -> ModuleType:
    path = Path(path)
    name = f"_task_{path.stem}_{abs(hash(str(path)))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, f"cannot import {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a broken file must not stay half-imported for the next caller
        raise
    return module
