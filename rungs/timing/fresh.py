"""Fresh input values for every timed call after the first: each element of each input from one of two independent
draws of the task's input maker, by a coin drawn from the parent's seed. The worker writes them (`Fresh`, through
rungs/timing/measure.py); the parent's trusted reference process (rungs/ladder/bench_reference.py) rebuilds a checked
call's inputs by the same rule, from the same seed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

ALT_SEED_OFFSET = 7_777_777
"""The second draw of a bench entry's inputs is the input maker's at seed + this (an independent draw of the same
distribution, with the same structure: zeros, triangles and value ranges the maker puts there stay)."""
CALL_SEED_STRIDE = 1_000_003


def alt_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The bench entry of the second, independent draw whose elements fresh_values mixes with the first's."""
    return {**entry, "seed": entry["seed"] + ALT_SEED_OFFSET}


def call_seed(fresh_seed: int, call: int, slot: int = 0) -> int:
    """The seed of the values call `call` sees in input slot `slot` (a graph replay's sub-call; 0 when timed call by
    call). The parent (rungs/ladder/bench_reference.py) rebuilds a checked call's inputs from it."""
    return (fresh_seed + CALL_SEED_STRIDE * call + slot) % (1 << 62)


def input_mask(shape: Sequence[int], device: Any, seed: int, index: int) -> Any:
    """Which elements of input `index` a call with values `seed` takes from the first draw (True) or the second: the
    one rule the worker (fresh_values) and the parent (rungs/ladder/bench_reference.py) share, drawn on the same
    device."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed((seed * 131 + index) % (1 << 62))
    bits = torch.empty(tuple(shape), dtype=torch.uint8, device=device).random_(0, 2, generator=g)
    return bits.view(torch.bool)


def mixable(base: Any, alt: Any) -> bool:
    import torch

    return (isinstance(base, torch.Tensor) and isinstance(alt, torch.Tensor) and base.numel() > 0
            and base.shape == alt.shape and base.dtype == alt.dtype and base.device == alt.device)


def fresh_values(base: Sequence[Any], alt: Sequence[Any], seed: int, out: Sequence[Any] | None = None) -> list[Any]:
    """One call's inputs: every element of every tensor input taken from `base` or `alt` (two independent draws of the
    task's input maker) by a coin drawn from `seed`, written into `out` (the call's input buffers) or new tensors.
    Each element keeps its distribution and place; the tensor as a whole is one of 2^numel, so no result cache keyed
    by an input's object, address, shape or any sample of its values can hit again. Inputs that are not tensors,
    and tensors the two draws do not share the shape of, stay as in `base`."""
    import torch

    made = []
    for i, (b, a) in enumerate(zip(base, alt)):
        dest = out[i] if out is not None else None
        if not mixable(b, a):
            if dest is not None and isinstance(b, torch.Tensor) and dest is not b:
                dest.copy_(b)
            made.append(dest if dest is not None else b)
            continue
        mask = input_mask(b.shape, b.device, seed, i)
        if dest is None:
            made.append(torch.where(mask, b, a))
        else:
            torch.where(mask, b, a, out=dest)
            made.append(dest)
    return made


@dataclass
class Fresh:
    """Fresh input values for every call after the first (fresh_values): the second draw to mix with the first, and
    the parent's seed, from which the parent rebuilds any call's inputs (call_seed)."""

    alt: list[Any]
    seed: int

    def write(self, base: Sequence[Any], dest: Sequence[Any], call: int, slot: int = 0) -> None:
        fresh_values(base, self.alt, call_seed(self.seed, call, slot), out=dest)
