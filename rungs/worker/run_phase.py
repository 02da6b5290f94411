"""The worker's run phase: call the entry on each case's inputs (through Triton's interpreter on a CPU) under the
guards, and save its outputs for the parent to judge; again on the first case of each shape over memory poisoned
differently (determinism), on the largest with every launch a no-op (launch dependence), and on the largest for every
other point of a declared config space. The backend's launch gate counts the launches.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

from rungs.backends import WorkerBackend
from rungs.worker import autotune
from rungs.worker.calls import GUARD_ERRORS, call_entry, same_bits, save_outputs
from rungs.worker.compile_phase import dropped_reason, out_of_resources
from rungs.worker.candidate import judged_state, largest_case, load_candidate, to_device, write_json
from rungs.worker.job import LAUNCH_LOG, POISON_PATTERN, Job
from rungs.worker.launch_gate import launch_count, launches_skipped, set_candidate, start_launch_log, take_launch_log


def _describe(value: Any) -> dict[str, Any]:
    import torch

    if type(value) is torch.Tensor:
        return {"kind": "tensor", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", ""),
                "device": value.device.type, "stride": list(value.stride()), "contiguous": value.is_contiguous()}
    return {"kind": type(value).__name__}


class pattern_poison:
    """Within the block, every torch.empty* tensor starts filled with POISON_PATTERN instead of NaN, so a kernel
    whose output depends on what memory held before (an uninitialized read, or a race) changes its answer."""

    NAMES = ("empty", "empty_like", "empty_strided")

    def __enter__(self) -> "pattern_poison":
        import torch

        self.saved = {n: getattr(torch, n) for n in self.NAMES}
        self.saved_new_empty = torch.Tensor.new_empty

        def filled(make: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                t = make(*args, **kwargs)
                return t.fill_(POISON_PATTERN if t.is_floating_point() else 0x5A) if t.numel() else t
            return wrapper

        for n in self.NAMES:
            setattr(torch, n, filled(self.saved[n]))
        torch.Tensor.new_empty = filled(self.saved_new_empty)
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        for n, f in self.saved.items():
            setattr(torch, n, f)
        torch.Tensor.new_empty = self.saved_new_empty


def phase_run(job: Job, job_dir: Path, on_cuda: bool, backend: WorkerBackend) -> dict[str, Any]:
    import torch

    # Output memory is poisoned: torch.empty* returns NaN (floats) or the largest integer, so an element the
    # kernel never writes shows up in the comparison instead of holding a stale right answer.
    judged_state()
    backend.before_run(on_cuda)  # the launch gate is in already: main() puts it in before the candidate's import
    set_candidate(job.kernel)
    entry = load_candidate(job.kernel, job.entry, job, job_dir)
    fn = autotune.bound(entry)  # the chosen point of a declared space (the default on a CPU)
    device = "cuda" if on_cuda else "cpu"
    cases = []
    launch_log: dict[str, list[dict[str, Any]]] = {}

    def call(inputs: list[Any], case: dict[str, Any]) -> list[Any]:
        return call_entry(fn, inputs, job, on_cuda, case.get("max_output_bytes"))

    def save(outputs: list[Any], name: str) -> None:
        save_outputs(outputs, job_dir / name)

    for case in job.cases:
        inputs = [to_device(v, device) for v in torch.load(job_dir / case["inputs"], weights_only=True)]
        before = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        launches_before = launch_count()
        start_launch_log()
        t0 = time.perf_counter()
        try:
            outputs = call(inputs, case)
        finally:
            launch_log[case["id"]] = take_launch_log()
        seconds = time.perf_counter() - t0
        changed = [i for i, (a, b) in enumerate(zip(inputs, before)) if not same_bits(a, b)]
        # saved now (the re-runs below must not touch it), named as the case's once they are done too: a worker
        # that dies leaves the out file of each case it finished and no other (the run rung says which it died in)
        save(outputs, f"out-{case['id']}.pt.part")
        record = {"id": case["id"], "seconds": seconds, "outputs": [_describe(o) for o in outputs],
                  "inputs_changed": changed, "launches": launch_count() - launches_before}
        if case.get("first_of_shape") and not changed:
            # Determinism: the same inputs again, with fresh memory holding a different poison.
            with pattern_poison():
                save(call(inputs, case), f"out-{case['id']}-again.pt")
        if case.get("probe_launches") and not changed:
            # Once more with every launch a no-op, over NaN-poisoned memory: the parent fails a kernel
            # whose output still matches the reference (computed by torch, numpy or the host, not the kernel).
            # A probe that raises is reported, not forgiven: raising when the launches did nothing is how a kernel
            # that computes elsewhere would hide from the probe (the parent fails it).
            with launches_skipped():
                try:
                    save(call(inputs, case), f"out-{case['id']}-nolaunch.pt")
                except GUARD_ERRORS:
                    raise
                except Exception as exc:  # noqa: BLE001 - judged by the parent
                    record["probe_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        os.replace(job_dir / f"out-{case['id']}.pt.part", job_dir / f"out-{case['id']}.pt")
        cases.append(record)
    write_json(job_dir / LAUNCH_LOG.format(phase="run"), launch_log)
    return {"ok": True, "cases": cases, "other_configs": _run_other_points(entry, job, job_dir, on_cuda)}


def _run_other_points(entry: Callable[..., Any], job: Job, job_dir: Path, on_cuda: bool) -> dict[str, Any] | None:
    """CUDA, a declared space: every point but the chosen one on the largest test case, saved as
    out-<case>-cfg<k>.pt, so that the parent checks each point the autotune table reports (the chosen one is judged
    on every case above)."""
    import torch

    space = autotune.current()
    if not on_cuda or space is None or len(space) < 2:
        return None
    case = largest_case(job)
    inputs = [to_device(v, "cuda") for v in torch.load(job_dir / case["inputs"], weights_only=True)]
    files: dict[str, str] = {}
    errors: dict[str, str] = {}
    for k in range(len(space)):
        if k == autotune.choice():
            continue
        if k in space.dropped:
            errors[str(k)] = f"dropped ({space.dropped[k]})"  # at compile, or timed out of resources in autotune
            continue
        with autotune.chosen(k):
            try:
                outputs = call_entry(autotune.bound(entry), inputs, job, on_cuda, case.get("max_output_bytes"))
            except GUARD_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001 - this point is reported as failing, the chosen one is judged
                errors[str(k)] = (f"dropped ({dropped_reason(exc, False)})" if out_of_resources(exc)
                                  else f"{type(exc).__name__}: {str(exc)[:300]}")
                continue
        files[str(k)] = f"out-{case['id']}-cfg{k}.pt"
        save_outputs(outputs, job_dir / files[str(k)])
    return {"case": case["id"], "files": files, "errors": errors}
