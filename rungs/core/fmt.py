"""Numbers and text in messages a person reads: enough digits to show the difference, never a word cut in half.

Every message that compares a value with a limit or with another value goes through `against` or `pair`, so a
failing check never reads `cosine 1 < 1`; every message shortened to fit a column goes through `clip`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

MIN_DIGITS = 3
MAX_DIGITS = 17  # enough for any float64 to print back exactly


def pairs(mapping: Mapping[str, Any]) -> str:
    """A shape, a config or constexprs as `M=4096 N=4096 K=4096`: how every message and table labels them."""
    return " ".join(f"{k}={v}" for k, v in mapping.items())


def num(x: float, digits: int = 4) -> str:
    """`x` with `digits` significant digits, plain where that is short (0.348286, 1e-05, 123.5)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}g}"


def exact(x: float) -> str:
    """A limit as the task wrote it: the shortest text that reads back as the same float (0.999999, 1e-05)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x) if isinstance(x, float) else str(x)


def _sign(a: float, b: float) -> int:
    return (a > b) - (a < b)


def against(value: float, other: float, digits: int = MIN_DIGITS) -> str:
    """`value` with the fewest significant digits (at least `digits`) that still compare with `other` the way
    the true value does: 0.99999 against 0.999999 reads 0.99999, never 1."""
    if not (isinstance(value, float) and isinstance(other, (int, float)) and math.isfinite(value)
            and math.isfinite(other)):
        return num(value, digits)
    want = _sign(value, other)
    for d in range(digits, MAX_DIGITS + 1):
        text = f"{value:.{d}g}"
        if _sign(float(text), other) == want:
            return text
    return repr(value)


def pair(a: float, b: float, digits: int = 6) -> tuple[str, str]:
    """Two values (got, expected) with the same number of significant digits, at least `digits`, and as many
    more as it takes for unequal values to print differently."""
    if not all(isinstance(x, float) and math.isfinite(x) for x in (a, b)) or a == b:
        return num(a, digits), num(b, digits)
    for d in range(digits, MAX_DIGITS + 1):
        sa, sb = f"{a:.{d}g}", f"{b:.{d}g}"
        if sa != sb:
            return sa, sb
    return repr(a), repr(b)


def percent(part: int, whole: int) -> str:
    """`part` of `whole` as a percentage that is 100% only when all are and 0% only when none are."""
    if whole <= 0:
        return "0%"
    share = 100.0 * part / whole
    if part == whole:
        return "100%"
    if part == 0:
        return "0%"
    for d in range(2, MAX_DIGITS + 1):
        text = f"{share:.{d}g}"
        if 0.0 < float(text) < 100.0:
            return f"{text}%"
    return f"{share!r}%"


def clip(text: str, limit: int, keep_lines: bool = False) -> str:
    """`text` shortened to about `limit` characters at a word boundary, ending in an ellipsis; a first word
    longer than the limit is kept whole (a cut word or number reads as a different one). Runs of white space
    become one space, unless `keep_lines` (for text shown with its line breaks)."""
    if not keep_lines:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = max(text.rfind(" ", 0, limit), text.rfind("\n", 0, limit))
    if cut <= 0:
        cut = min((i for i in (text.find(" "), text.find("\n")) if i > 0), default=-1)
        if cut < 0:
            return text
    return text[:cut].rstrip(",;:-( \n") + " …"
