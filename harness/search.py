"""Search over candidates: which finished candidates a round's new candidates improve on, and how they climb.

A run is a tree. Each candidate is one record of the journal (`iteration`, its folder `iter-NNN/`) with a parent:
the candidate whose kernel it improved on (None: written from the task alone). Each round the loop asks its
Strategy for the parents of its N candidates, the model writes them, they climb the ladder (side by side on
several worker pools when asked), and they are journaled together. A strategy reads only the tree the journal
holds, so a resumed run needs no state of its own to go on the same way.

    latest     one line of iterations, each improving on the last kernel (the loop before issue 16; the default
               with one candidate)
    greedy     every candidate improves on the best kernel so far (a regression is recorded, then left behind)
    beam:K     the candidates improve on the K best kernels so far, in turn
    best-of-n  every candidate is written from the task alone; the run keeps the best of all
"""
from __future__ import annotations

import math
import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, Sequence, TypeVar

from harness.events import IterationFinished
from harness.store import EMPTY_SHA, kernel_sha
from rungs.core.errors import BadInput
from rungs.core.result import Verdict

Rank = tuple[int, float, int]


def rank(verdict: Verdict) -> Rank:
    """Higher is better: a pass beats a fail; among passes the lower runtime (an untimed pass, on a CPU, ranks
    below a timed one); among fails the one that climbed more rungs."""
    runtime = verdict.metric("runtime_us")
    return (int(verdict.verdict == "pass"), -runtime if isinstance(runtime, (int, float)) else -math.inf,
            sum(r.status == "ok" for r in verdict.rungs))


def regressed(child: Verdict, parent: Verdict) -> bool:
    return rank(child) < rank(parent)


def ranked(tree: Iterable[IterationFinished]) -> list[IterationFinished]:
    """Candidates with a kernel of their own (not a duplicate's copied verdict), best first; ties: the newer first."""
    kept = [e for e in tree if e.kernel_sha != EMPTY_SHA and e.duplicate_of is None]
    return sorted(kept, key=lambda e: (rank(e.verdict), e.iteration), reverse=True)


class Strategy(Protocol):
    """The plug point: the parent of each of a round's `n` candidates, from the finished tree."""

    name: str
    linear: bool
    """True: one line of iterations; each prompt shows the last iteration's result (a failure the model must fix).
    False: each prompt shows its parent's result."""

    def parents(self, tree: Sequence[IterationFinished], base: int | None, n: int) -> list[int | None]:
        """`base`: the latest candidate with a kernel (or a revert's choice)."""
        ...


@dataclass(frozen=True)
class Latest:
    name: str = "latest"
    linear: bool = True

    def parents(self, tree: Sequence[IterationFinished], base: int | None, n: int) -> list[int | None]:
        return [base] * n


@dataclass(frozen=True)
class Beam:
    width: int = 1
    name: str = "greedy"
    linear: bool = False

    def parents(self, tree: Sequence[IterationFinished], base: int | None, n: int) -> list[int | None]:
        tops: list[int | None] = [e.iteration for e in ranked(tree)[:self.width]] or [base]
        return [tops[i % len(tops)] for i in range(n)]


@dataclass(frozen=True)
class BestOfN:
    name: str = "best-of-n"
    linear: bool = False

    def parents(self, tree: Sequence[IterationFinished], base: int | None, n: int) -> list[int | None]:
        return [None] * n


STRATEGIES = "latest, greedy, beam:K (K >= 1), best-of-n"


def parse_strategy(text: str) -> Strategy:
    """`--strategy`'s value; a bad one is one line naming the known ones."""
    name, _, arg = text.strip().partition(":")
    if name == "beam" and arg.isdigit() and int(arg) >= 1:
        return Beam(width=int(arg), name=f"beam:{int(arg)}")
    if not arg and name in ("latest", "greedy", "best-of-n"):
        return {"latest": Latest(), "greedy": Beam(), "best-of-n": BestOfN()}[name]
    raise BadInput(f"--strategy {text!r}: not a strategy; known: {STRATEGIES}")


@dataclass
class Draft:
    """One candidate of a round: written by the model (or a person), not yet climbed."""

    node: int
    parent: int | None
    code: str | None
    notes: str
    source: str = "model"


def duplicates(drafts: Sequence[Draft], tree: Iterable[IterationFinished]) -> dict[int, int]:
    """Candidate -> the earlier candidate with the same source (in the tree or earlier in this round): it is not
    climbed again and gets that one's verdict."""
    first: dict[str, int] = {}
    for e in tree:
        if e.kernel_sha != EMPTY_SHA and e.duplicate_of is None:
            first.setdefault(e.kernel_sha, e.iteration)
    same = {}
    for d in drafts:
        if d.code:
            sha = kernel_sha(d.code)
            if sha in first:
                same[d.node] = first[sha]
            else:
                first[sha] = d.node
    return same


T = TypeVar("T")
R = TypeVar("R")
P = TypeVar("P")


def on_pools(fn: Callable[[T, P], R], items: Sequence[T], pools: Sequence[P]) -> list[R]:
    """fn(item, pool) for each item, results in order; one item per pool at a time, so a pool (one GPU, or one
    set of CPU workers) never serves two climbs at once. One pool: in this thread, one after another."""
    if len(pools) <= 1 or len(items) <= 1:
        return [fn(item, pools[0]) for item in items]
    free: queue.SimpleQueue[P] = queue.SimpleQueue()
    for p in pools:
        free.put(p)

    def one(item: T) -> R:
        pool = free.get()
        try:
            return fn(item, pool)
        finally:
            free.put(pool)

    with ThreadPoolExecutor(max_workers=len(pools), thread_name_prefix="climb") as ex:
        return list(ex.map(one, items))


__all__ = ["Strategy", "Latest", "Beam", "BestOfN", "parse_strategy", "rank", "ranked", "regressed", "Draft",
           "duplicates", "on_pools", "STRATEGIES"]
