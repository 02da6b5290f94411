"""Rung results and the ladder's verdict: the contract of `harness check --json` (its fields: README)."""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "fail", "skip"]


class RungResult(BaseModel):
    """One rung's outcome, in words a person and a model can act on."""

    name: str
    status: Status
    message: str = ""
    metrics: dict[str, Any] = Field(default_factory=dict)
    """Named with units: runtime_us, gbps, tflops, roofline_fraction, max_abs_err ..."""
    seconds: float = 0.0
    """Wall time the rung took."""
    details: str = ""
    """Longer text for the model and the report (metric tables, compiler output); not in the one-line message."""


class GpuUse(BaseModel):
    """Which device a climb held, and for how long (what the GPU-seconds budget counts)."""

    index: int
    """The GPU's index as the harness sees it (`--gpus`)."""
    name: str = ""
    """The device's name (`NVIDIA H200`); `cpu` for a CPU pool given an index (tests)."""
    seconds: float = 0.0
    """Wall time the climb held the device: one worker compiles, runs and times, then the profile and the
    baselines run on the same GPU; no other climb used it meanwhile."""


class Verdict(BaseModel):
    verdict: Literal["pass", "fail", "unverified"]
    """"unverified": compiled (and dumped), but not run: no GPU here and no interpreter for the DSL. Never a pass."""
    failed_rung: str | None = None
    rungs: list[RungResult] = Field(default_factory=list)
    sandbox: str = ""
    """How the candidate was isolated (rungs/sandbox/bwrap.note): 'UNSANDBOXED ...' when the user opted out."""
    gpu: GpuUse | None = None
    """The GPU that climbed (and timed) it, when the climb was pinned to one; None: the harness's own default."""
    memory_wait_s: float = 0.0
    """Seconds the climb waited for GPU memory held by climbs beside it (rungs/ladder/gpu_memory.admitted)."""
    memory_note: str = ""
    """Why it went ahead without its reservation, if it did."""
    warnings: list[str] = Field(default_factory=list)
    """What this pass could not rule out on this machine (docs/threat-model.md, 'What a verdict rests on'): no
    outside witness, a witness that shares its uid with the candidate, launches that could not be named."""

    def rung(self, name: str) -> RungResult | None:
        return next((r for r in self.rungs if r.name == name), None)

    def metric(self, name: str) -> Any:
        """First value of a metric across rungs (e.g. runtime_us from benchmark)."""
        for r in self.rungs:
            if name in r.metrics:
                return r.metrics[name]
        return None

    @property
    def summary(self) -> str:
        if self.verdict == "pass":
            return "pass"
        if self.verdict == "unverified":
            run = self.rung("run")
            return f"unverified: {run.message if run else 'compiled, not run'}"
        failed = self.rung(self.failed_rung or "")
        return f"fail at {self.failed_rung}: {failed.message if failed else ''}"


def headline(error: str) -> str:
    """The one line of a worker's error worth showing: the exception's own first line ("AcceleratorError: CUDA
    error: an illegal memory access was encountered"), not the advice torch appends below it. The worker puts the
    candidate's frames first, indented; Triton's CompilationError ("at 12:4:" then source) has its reason last."""
    lines = [ln.rstrip() for ln in error.splitlines() if ln.strip()]
    if not lines:
        return "failed"
    own = [ln for ln in lines if not ln.startswith("  ")]
    if own and not re.match(r"^\w+: at \d+:\d+:", own[0]):
        return own[0][:500]
    return lines[-1][:500]
