"""The profile rung: a placeholder until Nsight Compute profiling lands (it says `skip` on every device)."""
from __future__ import annotations

from typing import Any

from rungs.result import RungResult


def rung(ladder: Any) -> RungResult:
    return RungResult(name="profile", status="skip", message="skip: profiling (ncu) is not implemented yet")
