"""The harness process's heap: what its imports made (torch alone is about a million objects), frozen once out of
the garbage collector's sight, so that the collections a climb's allocations set off do not walk them every time.

perf over `harness check` on this 2-core machine: about 29% of the harness process's CPU time was the collector
(gc_collect_main and its visits), and about 13% of all Python time in the CPU suite. Frozen objects are never
collected, so the freeze is made once per process, after a full collection, with only imports and the first task
alive: a long `harness run` does not keep each climb's leftovers.
"""
from __future__ import annotations

import atexit
import gc

_frozen = False


def freeze_imports() -> None:
    """Once per process: collect, then move every object alive now to the permanent generation (gc.freeze). The
    worker freezes its own without the collection (rungs/worker/loop.main: one job, then os._exit)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
        # Back in the collector's sight at exit, so the interpreter's teardown frees them as it would have: Triton's
        # bindings (nanobind) otherwise report every object still alive then as "leaked" on stderr.
        atexit.register(gc.unfreeze)
