"""Which GPUs a run may use, and how a process is pinned to one of them.

A GPU index is CUDA's, as this process sees it (0 is the first device in the harness's own CUDA_VISIBLE_DEVICES,
when that is set). Every process started for a climb on GPU i (its sandboxed worker, the baseline and bench-reference
processes, ncu) gets `pinned_env(i)`, so its "cuda" device is GPU i and no other GPU is in CUDA's sight.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys

from rungs.core.errors import BadInput


def _own_devices() -> list[str] | None:
    """The harness's own CUDA_VISIBLE_DEVICES entries; None where it is not set (every GPU is in sight)."""
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return None
    return [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]


def physical(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry of the harness's GPU `index`: itself, or its entry in the harness's own list
    (an index into the harness's view of the devices, not the machine's)."""
    own = _own_devices()
    if own is not None and index < len(own):
        return own[index]
    return str(index)


def index_of(entry: str) -> int:
    """The harness's index of a CUDA_VISIBLE_DEVICES entry (a Ray GPU id on this host): the inverse of physical."""
    own = _own_devices()
    if own is not None and entry in own:
        return own.index(entry)
    return int(entry)


def pinned_env(index: int | None) -> dict[str, str]:
    """Environment entries that show a process only GPU `index` (nothing for None: what the harness sees)."""
    return {} if index is None else {"CUDA_VISIBLE_DEVICES": physical(index)}


PROBE = "import torch, json; print(json.dumps([torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]" \
        " if torch.cuda.is_available() else []))"


@functools.lru_cache(maxsize=1)
def names() -> tuple[str, ...]:
    """The names of the GPUs this process sees, by index; () with none. Asked of a short child process, so the
    harness's own process never makes a CUDA context (its children are pinned to other GPUs)."""
    import torch

    if not torch.cuda.is_available():
        return ()
    import json

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False)
    try:
        return tuple(json.loads(out.stdout.strip().splitlines()[-1]))
    except (json.JSONDecodeError, IndexError):
        return tuple(f"GPU {i}" for i in range(torch.cuda.device_count()))


def parse(text: str | None, available: tuple[str, ...]) -> list[int]:
    """`--gpus`'s value: "0,1", "all", or None (the first GPU; none on a machine without one). A GPU that is not
    there is one line naming those that are."""
    if text is None:
        return [0] if available else []
    have = (f"this machine has {len(available)} ({', '.join(f'{i}: {n}' for i, n in enumerate(available))})"
            if available else "this machine has no CUDA device")
    if text.strip() == "all":
        if not available:
            raise BadInput(f"--gpus all: {have}")
        return list(range(len(available)))
    picked: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise BadInput(f"--gpus {text!r}: {part!r} is not a GPU index (give indexes like 0,1 or 'all')")
        if int(part) >= len(available):
            raise BadInput(f"--gpus {text!r}: there is no GPU {part}; {have}")
        if int(part) not in picked:
            picked.append(int(part))
    return picked


__all__ = ["physical", "index_of", "pinned_env", "names", "parse"]
