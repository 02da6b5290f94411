"""Grids and integer arguments as expressions of the task's sizes, found from the launches recorded at nearby shapes.

The Python launcher computes each grid dimension and integer argument from the tensors' sizes (`M`,
`cdiv(M, 128) * cdiv(N, 256)`, a stride `N`); the export sees only the numbers. The recording at the exported
shape and at shapes one size away (where the launcher chose the same kernels and constexprs) pins the
expression down: the simplest candidate that gives every recorded value is taken. Where none does, the value is
fixed, and the C function then accepts only the exported shape.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Iterator

Sizes = dict[str, int]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Expr:
    text: str
    """Python and C both read it once `cdiv` is defined (the C side has the macro KH_CDIV)."""
    names: tuple[str, ...] = ()
    """The sizes it uses."""
    fixed: bool = False
    """True: no expression of the sizes fits every recording; the value holds at the exported shape only."""

    def value(self, sizes: Sizes) -> int:
        return int(eval(self.text, {"__builtins__": {}, "cdiv": cdiv}, dict(sizes)))  # noqa: S307 - our own text

    def c(self, prefix: str = "") -> str:
        """The C expression over int64_t size variables named `prefix + name`."""
        out = self.text
        for name in sorted(self.names, key=len, reverse=True):
            out = _replace_word(out, name, prefix + name)
        return out.replace("cdiv(", "KH_CDIV(")


def _replace_word(text: str, word: str, by: str) -> str:
    return re.sub(rf"\b{re.escape(word)}\b", by, text)


def candidates(names: list[str], divisors: list[int]) -> Iterator[str]:
    """Expressions from simplest on: a size, a size over a block (rounded up), and products of two or three."""
    terms = list(names) + [f"cdiv({n}, {d})" for n in names for d in divisors if d > 1]
    for t in terms:
        yield t
    for k in (2, 3):
        for combo in itertools.combinations_with_replacement(terms, k):
            yield " * ".join(combo)


def derive(observed: list[tuple[Sizes, int]], divisors: list[int]) -> Expr:
    """The simplest expression that gives each observed value at its sizes; observed[0] is the exported shape."""
    values = {v for _, v in observed}
    if len(values) == 1 and (len(observed) > 1 or observed[0][1] in (0, 1)):
        return Expr(str(observed[0][1]))
    names = [n for n in observed[0][0]]
    for text in candidates(names, list(dict.fromkeys(divisors))):
        expr = Expr(text, tuple(n for n in names if re.search(rf"\b{n}\b", text)))
        if all(expr.value(s) == v for s, v in observed):
            return expr
    return Expr(str(observed[0][1]), fixed=True)


def divisors_of(constexprs: list[object]) -> list[int]:
    """Block sizes a launcher divides by: the integer constexprs it launched with, then powers of two up to 1024."""
    ints = [v for v in constexprs if isinstance(v, int) and not isinstance(v, bool) and v > 1]
    # the launch's own block sizes first: where the recordings cannot tell cdiv(M, 128) * cdiv(N, 256) from
    # cdiv(M, 32) * cdiv(N, 1024), the one written with the kernel's blocks is the launcher's
    return list(dict.fromkeys(ints + [2 ** k for k in range(1, 11)]))
