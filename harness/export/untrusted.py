"""What the recording process hands back is the candidate's to write: checked before any of it reaches a Makefile,
a C source or a file copy made by the harness.

The recording runs the candidate (in the sandbox) and writes capture.json and the AOT tools' sources beside it; the
export then renders those names and values into C and a Makefile that `make` runs on the host. A file name such as
`$(shell ...).c`, an identifier such as `x,exit(1)` or a comment holding `*/` would have been the candidate's code
running outside the sandbox. So: only plain files with plain names are copied out, every string of the capture is
free of what could end a C token or start a shell or make expansion, and the names used as files or C identifiers
have exactly their form.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rungs.core.errors import HarnessError

FORBIDDEN = re.compile(r"[\x00-\x1f\x7f$`;\"'\\#{}|&<>]|\*/|/\*")
"""Characters no honest capture holds (kernel names, C types, signatures, shapes, dtypes, check expressions)."""
FILE = re.compile(r"[A-Za-z0-9_][\w.-]{0,200}")
SOURCE = re.compile(r"[A-Za-z0-9_][\w.-]{0,200}\.[cho]")
IDENT = re.compile(r"[A-Za-z_]\w{0,200}")
COPY_MAX_BYTES = 256 << 20


def copyable(path: Path) -> bool:
    """A file of the recording's folder the export may copy: a plain name, a regular file (not a link to a host
    file, not a FIFO), of a size an export's sources and objects have."""
    from rungs.sandbox.pool import _plain_file

    return bool(FILE.fullmatch(path.name)) and _plain_file(path, COPY_MAX_BYTES)


def _strings(value: Any, where: str) -> Any:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, where)
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def check_capture(capture: dict[str, Any], out_dir: Path) -> None:
    """Raise HarnessError (one line) unless the capture's strings and names are what an honest recording writes."""
    for where, text in _strings(capture, "capture"):
        if FORBIDDEN.search(text):
            raise HarnessError(f"the recording wrote {where} = {text[:60]!r}: not a value the export puts in C or "
                               "a Makefile (the candidate's process writes the capture)")
    for i, b in enumerate(capture.get("builds") or []):
        if not isinstance(b, dict):
            raise HarnessError(f"the recording wrote capture.builds[{i}] that is not a record")
        names = [*(b.get("files") or []), *(b[k] for k in ("object", "header") if b.get(k))]
        for name in names:
            if not (isinstance(name, str) and SOURCE.fullmatch(name) and copyable(out_dir / name)):
                raise HarnessError(f"the recording named capture.builds[{i}] file {str(name)[:60]!r}: not a source, "
                                   "header or object it wrote")
        for key in ("func", "kernel", "wrapper", "host_entry"):
            if b.get(key) is not None and not (isinstance(b[key], str) and IDENT.fullmatch(b[key])):
                raise HarnessError(f"the recording wrote capture.builds[{i}].{key} = {str(b[key])[:60]!r}: not a C "
                                   "identifier")
