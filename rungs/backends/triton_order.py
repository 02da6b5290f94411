"""Triton's CPU interpreter runs a launch's programs in a shuffled order, not one after another by program id.

The interpreter runs each program of a grid to its end before the next starts, in order of program id. A kernel
whose program (r, 1) reads what program (r, 0) wrote to global memory, with nothing ordering the two, then always
reads finished values, and passes on a CPU; on a GPU the programs of a launch run in any order and at the same
time, and it races (red team, 2026-12-05: a softmax whose second program read the row's max and sum from scratch
the first wrote). Here every launch runs its programs in an order of its own, drawn at random: a kernel that counts
on program order reads unwritten (NaN-poisoned) memory on most launches, and the determinism re-run, in another
order, disagrees with the first. What this does not catch: programs that agree on roles at run time (an atomic
ticket) and then read without waiting for the writer; the interpreter still runs each program to its end, so only
a GPU shows that race.
"""
from __future__ import annotations

import random
from typing import Any

_MARKER = "_kernel_harness_shuffled"
_ORDER_MAX = 1 << 22
"""Grids up to this many programs get a random permutation (a list of that length); larger ones (not seen on a
CPU, where the interpreter is far too slow for them) run in reverse order."""


def install() -> None:
    """Shuffle every interpreted launch's program order in this process. Idempotent."""
    from triton.runtime import interpreter as interp

    builder = interp.InterpreterBuilder
    if getattr(builder, _MARKER, False):
        return
    set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx
    draw = random.SystemRandom()

    def set_grid_dim(self: Any, nx: int, ny: int, nz: int) -> None:
        set_dim(self, nx, ny, nz)
        n = nx * ny * nz
        order = list(range(n)) if n <= _ORDER_MAX else None
        if order is not None:
            draw.shuffle(order)
        self._kh_order = order

    def set_grid_idx(self: Any, x: int, y: int, z: int) -> None:
        # The interpreter's loop asks for (x, y, z) in order; the k-th program it runs is program order[k].
        _, ny, nz = self.grid_dim
        k = (x * ny + y) * nz + z
        order = getattr(self, "_kh_order", None)
        p = order[k] if order is not None and k < len(order) else self.grid_dim[0] * ny * nz - 1 - k
        set_idx(self, p // (ny * nz), (p // nz) % ny, p % nz)

    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
    setattr(builder, _MARKER, True)
