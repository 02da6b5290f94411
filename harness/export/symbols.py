"""The symbol check of an export's objects (`nm`): what links, without a GPU to run it."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ALLOWED_UNDEFINED = re.compile(r"^(cu[A-Z]\w*|_?_?(printf|puts|exit|str[a-z]+|mem[a-z]+|fprintf|stack_chk_fail)\w*"
                               r"|_GLOBAL_OFFSET_TABLE_)$")
"""What an export's objects may leave to the program: the CUDA driver API and a few C library functions."""


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """(defined, undefined) external symbols of one object file."""
    out = subprocess.run(["nm", "-g", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            kind, name = parts[-2], parts[-1]
            (undefined if kind == "U" else defined).add(name)
    return defined, undefined


def link_problems(files: list[Path], wanted: list[str], allowed: re.Pattern[str] = ALLOWED_UNDEFINED) -> list[str]:
    """Problems, empty when every `wanted` symbol is defined by one of `files` and nothing they leave undefined
    between them is outside `allowed`."""
    defined: set[str] = set()
    undefined: set[str] = set()
    for path in files:
        d, u = symbols(path)
        defined |= d
        undefined |= u
    problems = [f"{name} is not defined by any object" for name in wanted if name not in defined]
    problems += [f"{name} is left undefined" for name in sorted(undefined - defined) if not allowed.match(name)]
    return problems


def check_symbols(out_dir: Path, fn: str, funcs: list[str]) -> list[str]:
    """Problems, empty when the entry and every kernel's loader and CUfunction are defined, and nothing but driver
    and C library functions is left undefined."""
    objects = [o for o in out_dir.glob("*.o") if not o.name.endswith("_test.o")]
    return link_problems(objects, [fn] + [f"load_{f}" for f in funcs] + [f"{f}_func" for f in funcs] + funcs)
