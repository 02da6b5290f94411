"""One atomic write: a reader never sees half a file, and writers side by side never share a temporary name.

Standard library only (the worker uses it)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes) -> None:
    """Write `data` to `path` through a uniquely named temporary file in the same folder, renamed over `path`
    (os.replace is atomic within one file system). Climbs run side by side: a fixed `.tmp` name would race."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
