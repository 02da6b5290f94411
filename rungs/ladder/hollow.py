"""The bench shapes' inputs described without values (rungs/timing/inputs.hollow_spec), kept in the harness cache.

The compile phase builds the entry at the bench shapes for the dumps (Job.dump_bench) and needs each input's shape,
stride and dtype: the task's input maker run on the meta device in the harness's own process. A process's first
meta-device op imports torch._dynamo and sympy (torch's Python meta functions are wrapped to disable dynamo): 1.5-2
CPU-s on a 2-core machine, more than the rest of a `harness check`'s own work on the softmax task, paid again by
every `harness` command. The description depends only on what `_key` hashes, so it is kept under `hollow/` in the
harness cache (written by the harness, outside the sandbox; a description only shapes the build for the dumps)."""
from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

from rungs.core.atomic import atomic_write
from rungs.ladder.roofline import cache_dir


def hollow_spec(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """rungs.timing.inputs.hollow_spec(entry), from the cache when the same entry was described before; raises what
    that raises (not kept)."""
    from rungs.timing.inputs import hollow_spec as describe

    path = cache_dir() / "hollow" / f"{_key(entry)}.json"
    try:
        spec = json.loads(path.read_text())
        if isinstance(spec, list) and all(isinstance(s, dict) for s in spec):
            return spec
    except (OSError, ValueError):
        pass
    spec = describe(entry)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(spec))
    except OSError:  # a read-only or full cache costs the next process the meta run, nothing else
        pass
    return spec


def _key(entry: dict[str, Any]) -> str:
    """The entry (shape, dtype, seed, distribution, the maker's file and function names; not its id), the bytes of
    every Python file beside the maker (it may import a helper from its folder), and torch's and Python's versions.
    Not the folder's path: a copy of a task elsewhere (each test has its own) is described the same."""
    import torch

    file, _, function = entry["inputs"].rpartition(":")
    folder = os.path.dirname(file)
    named = {**{k: v for k, v in entry.items() if k != "id"}, "inputs": f"{os.path.basename(file)}:{function}"}
    h = hashlib.sha256(json.dumps([named, torch.__version__, sys.version], sort_keys=True).encode())
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            h.update(f"\0{name}\0".encode())
            with open(os.path.join(folder, name), "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:32]
