"""The ladder: precheck -> compile -> run -> correctness -> benchmark -> dumps -> profile -> roofline.

A Ladder is a Climb (rungs/ladder/climb.py: everything the rungs share) that walks the ordered rungs
(rungs/ladder/rung.py). Candidate code runs only in worker processes (rungs/sandbox/pool.py); everything judged here
runs in the harness's own process. On a CPU, compile is ahead of time for sm_90a and run goes through the DSL's
interpreter (Triton's); a DSL with none stops after compile and dumps with the verdict "unverified". Benchmark and
profile need a CUDA device.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rungs.sandbox import gpus
from rungs.sandbox.bwrap import unreadable_in_sandbox
from rungs.ladder import gpu_memory, reference_server
from rungs.ladder.climb import Climb, cuda_available  # noqa: F401 - cuda_available: part of this module's interface
from rungs.core import heap
from rungs.core.errors import BadInput
from rungs.core.result import GpuUse, RungResult, Verdict
from rungs.core.spec import TaskSpec
from rungs.ladder.rung import ORDER, RUNGS, Rung, skip_reason  # noqa: F401 - ORDER: the rung names, in order
from rungs.sandbox.leftovers import remove_tree
from rungs.sandbox.pool import job_readable, sandbox_note


@dataclass
class Ladder(Climb):
    """One candidate's climb through `rungs` (default: all of them, in order)."""

    rungs: list[Rung] = field(default_factory=lambda: list(RUNGS))

    def climb(self) -> Verdict:
        heap.freeze_imports()  # torch and the rest, out of the collector's walks (rungs/core/heap.py)
        if self.device != "cuda":
            return self._climb(gpu_memory.Admission())
        # the worker makes the bench inputs with the task's input maker, in the sandbox
        why = unreadable_in_sandbox(self.task.resolve(self.task.inputs.partition(":")[0]))
        if why:  # the task's setup, not this candidate: one line and the CLI's bad-input exit, not a failed rung
            raise BadInput(f"{self.task.where('inputs')}: {why}")
        gpu = gpus.identity(self.pool.pinned_env() if self.pool else None)
        with gpu_memory.admitted(self.task, gpu) as admission:  # climbs beside it hold their bench tensors too
            short = None if admission.others else gpu_memory.shortfall(self.task, gpu)
            if short and reference_server.close_all():  # the bench references kept waiting hold GPU memory too
                short = gpu_memory.shortfall(self.task, gpu)
            if short:  # certain before any work: the inputs and outputs alone do not fit
                raise BadInput(short)
            return self._climb(admission)

    def _climb(self, admission: gpu_memory.Admission) -> Verdict:
        climb_started = time.monotonic()  # the GPU is held from here to the verdict (not while waiting for memory)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            for rung in self.rungs:
                why = skip_reason(rung, self)
                if why is not None:
                    result = RungResult(name=rung.name, status="skip", message=why)
                else:
                    if self.on_rung:
                        self.on_rung(rung.name)
                    rung_started = time.monotonic()
                    result = _guarded(rung, self)
                    result.seconds = round(time.monotonic() - rung_started, 3)
                self.results.append(result)
                if self.on_result:
                    self.on_result(result)
        finally:
            if self.session is not None:  # its zygote, clean, goes back to the pool for the next climb
                self.session.release()
            if self.reference_server is not None:  # reserved for a bench-shape reference this climb never reached
                reference_server.release(self.reference_server)
                self.reference_server = None
            if not self.keep_work:
                remove_tree(self.work_dir)  # the profile's folder is the candidate's to shape
            # An unknown DSL has no worker to warm; a climb that made no job (precheck failed) does not know which
            # folders the next worker shows, and leaves the waiting ones be.
            if self.pool is not None and self.backend is not None and self.job is not None:
                self.pool.warm_next(self.task.dsl, job_readable(self.job), zygote=self.session is not None)
        failed = self.failed
        verdict = "fail" if failed else "pass" if self.executes else "unverified"
        pool = self.pool
        held = None if pool is None or pool.index is None else \
            GpuUse(index=pool.index, name=pool.name or pool.device, seconds=round(time.monotonic() - climb_started, 6))
        return Verdict(verdict=verdict, failed_rung=failed, rungs=self.results, sandbox=sandbox_note(), gpu=held,
                       warnings=integrity_warnings(self.results, interpreted=self.task.dsl == "triton"
                                                   and not cuda_available()) if verdict == "pass" else [],
                       memory_wait_s=admission.wait_s, memory_note=admission.note)


INTERPRETED = ("computed by Triton's interpreter, not by the sm_90a build: a kernel whose output branches on the last "
               "bits of an approximate instruction (ex2, div.full, libdevice's sin or log), on the order a sum adds "
               "in, or on whether the compiler fused a multiply into an add can compute otherwise on a GPU "
               "(docs/threat-model.md)")


def integrity_warnings(results: list[RungResult], interpreted: bool = False) -> list[str]:
    """What a pass rests on less firmly than the trust boundary asks, in words (docs/threat-model.md): on a CPU the
    in-process op trace alone says whose code computed, and Triton's interpreter, not the build, computed (its numbers
    follow the build's but for approximate instructions' last bits and a sum's order); a timed pass without the
    outside witness stands on the worker's word; the witness shares its uid with the candidate; launches with no name
    ncu knows were not checked."""
    by = {r.name: r for r in results}
    bench, profile = by.get("benchmark"), by.get("profile")
    if bench is None or bench.status != "ok":
        return ["not timed here: whose code computed was checked inside the candidate's process only (the op trace); "
                "the outside checks (fresh-input checked calls, the Nsight Compute witness) need a GPU",
                *([INTERPRETED] if interpreted else [])]
    if profile is None or profile.status != "ok":
        why = profile.message if profile is not None else "no profile rung"
        return [f"no outside witness ({why[:160]}): the time stands on the worker's word, bounded by the checked calls "
                "and the ceilings"]
    warnings = ["the witness (Nsight Compute) and the candidate share uid 65534 in the sandbox and the candidate holds "
                "ncu's own descriptors; no forgery through them is known (docs/threat-model.md)"]
    if not profile.metrics.get("kernels_checked", True):
        warnings.append("the candidate's kernels have no names ncu knows: the witnessed call's launches were not "
                        "checked for library compute")
    return warnings


def _guarded(rung: Rung, climb: Climb) -> RungResult:
    """A rung's result; an exception in it (over what a candidate's worker left, which the candidate may have shaped)
    fails this candidate's climb with the reason instead of ending the run."""
    try:
        return rung(climb)
    except Exception as exc:  # noqa: BLE001 - the run goes on; the traceback is in the details
        return RungResult(name=rung.name, status="fail", details=traceback.format_exc()[-4000:],
                          message=f"the {rung.name} rung could not judge what the worker left ({type(exc).__name__}: "
                                  f"{str(exc)[:200]}): a malformed result, or a harness bug (traceback in details)")


def check(task: TaskSpec, kernel: Path, work_dir: Path, **kwargs: Any) -> Verdict:
    """One kernel file through the whole ladder."""
    return Ladder(task=task, kernel=kernel, work_dir=work_dir, **kwargs).climb()
