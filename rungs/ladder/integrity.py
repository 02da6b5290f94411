"""The parent's side of the anti-cheating checks that need the references or the timings (worker side:
rungs/worker/: tamper.py, launch_gate.py, hot_path.py, calls.py, timed_calls.py). Each returns None or a message naming
the trick it caught.

- launch dependence: the output of a case re-run with every kernel launch a no-op must not match the reference;
- stale results: a failing output bit-identical to an earlier case's output, for different inputs;
- after timing: the entry, called once more after the timed loops, must still match the reference;
- checked timed calls: the first timed call and ones picked at random launched kernels and returned what the first
  did (bench-shape correctness against the reference is rungs/ladder/bench_reference.py); host time is reported, never
  judged;
- one build: the compile phase (the sm_90a build) and the run phase (on a CPU, the interpreter) must have launched
  the same kernels with the same arguments, constexprs, launch options and grids.
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import torch

from rungs.ladder import metrics as m
from rungs.core.fmt import pairs
from rungs.ladder import outputs
from rungs.sandbox.pool import taken_output
from rungs.worker.job import GRAPH_SLOTS, LAUNCH_LOG, TIMED_KEPT



def _matches(outs: list[Any], refs: list[torch.Tensor], dtype: str, limits: dict[str, float]) -> bool:
    if len(outs) != len(refs):
        return False
    for out, ref in zip(outs, refs):
        if not isinstance(out, torch.Tensor) or out.shape != ref.shape:
            return False
        if m.assess(out, ref, dtype, limits)[2]:  # the same allowance the correctness rung gives
            return False
    return True


def launch_independence(case: Any, job_dir: Path, limits: dict[str, float], probed: bool = False,
                        probe_error: str | None = None, *, label: str) -> str | None:
    """The worker's re-run of `case` with every launch (of the DSL `label` names) skipped (out-<id>-nolaunch.pt) still matches.
    `probed`: this is the case the worker had to probe, so a probe that raised (`probe_error`) or left no output is
    a failure too: an entry that notices its launches did nothing and raises (or returns nothing) would otherwise
    hide host compute from the probe."""
    path = job_dir / f"out-{case.id}-nolaunch.pt"
    if not case.reference:
        return None
    where = f"case {case.id} ({case.label()})"
    if probed and probe_error:
        return (f"{where}: with every {label} launch made a no-op the entry raised ({probe_error}): an entry must "
                "return its outputs whatever its kernels computed (the harness checks the outputs depend on them)")
    if not path.is_file():
        return (f"{where}: the re-run with every {label} launch made a no-op left no output" if probed else None)
    try:
        outs = outputs.load(path, outputs.of_case(case))
    except outputs.OutputRefused as exc:
        return (f"{where}: with every {label} launch made a no-op the entry returned no output tensor(s) ({exc}): an "
                "entry must return its outputs whatever its kernels computed" if probed else None)
    if _matches(outs, case.reference, case.dtype, limits):
        return (f"case {case.id} ({case.label()}): the output does not depend on the {label} kernel's launches: "
                "with every launch made a no-op it still matched the reference, so something else computed it "
                "(torch, numpy or Python on the host)")
    return None


def fingerprint(out: Any) -> str | None:
    if not isinstance(out, torch.Tensor):
        return None
    data = out.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return f"{list(out.shape)}:{hashlib.sha1(data).hexdigest()}"


def stale_note(outs: list[Any], refs: list[torch.Tensor], seen: dict[str, tuple[str, str]]) -> str | None:
    """When a failing case returned exactly what an earlier case returned, though their references differ: a
    stale result served from a cache. `seen` maps output fingerprints to (case id, reference fingerprint)."""
    for out, ref in zip(outs, refs):
        key = fingerprint(out)
        earlier = seen.get(key) if key else None
        if earlier and earlier[1] != fingerprint(ref):
            return (f"the output is bit-identical to case {earlier[0]}'s, whose inputs differ: a stale result "
                    "served from a cache")
    return None


def remember(case_id: str, outs: list[Any], refs: list[torch.Tensor], seen: dict[str, tuple[str, str]]) -> None:
    for out, ref in zip(outs, refs):
        key = fingerprint(out)
        if key:
            seen.setdefault(key, (case_id, fingerprint(ref) or ""))


def after_bench(case: Any, job_dir: Path, phase: dict[str, Any], limits: dict[str, float]) -> str | None:
    """The entry's output on `case`, computed after the timed loops, must still match the reference."""
    recheck = phase.get("recheck")
    if not recheck or not case.reference:
        return None
    path = taken_output(job_dir, recheck.get("file"))
    if path is None:
        return f"after timing, the output of case {case.id} was not saved"
    try:
        outs = outputs.load(path, outputs.of_case(case))
    except outputs.OutputRefused as exc:
        return f"after timing, case {case.id} ({case.label()}): {exc}"
    if _matches(outs, case.reference, case.dtype, limits):
        return None
    return (f"after timing, case {case.id} ({case.label()}) no longer matches the reference: the kernel behaves "
            "differently once called many times (a result cache or a shortcut taken while timed)")


def host_time(cases: list[dict[str, Any]]) -> list[str]:
    """Host time beside GPU time, per bench shape, as notes: never a verdict. A one-launch entry's host time is its
    Python (argument checks, torch.empty, Triton's launcher binding arguments and looking up the compiled kernel)
    and the driver's launch call, measured by the host clock around the call itself. It used to be taken from the
    whole timed sample less an idle sample, which left in the 300 us spin (rungs/timing/devices.SPIN_CYCLES) that keeps
    the device busy while the host launches: an honest 33 us bf16 add + RMSNorm at M=N=4096 read as 336 us of host
    time, and as tampering. What decides tampering is the outside witness (rungs/ladder/profile.py: ncu's durations)."""
    notes = []
    for c in cases:
        host_us, gpu_us = c.get("host_us"), c.get("runtime_us")
        if host_us is None or gpu_us is None or not math.isfinite(host_us):
            continue
        label = pairs(c.get("shape", {}))
        if c.get("mode") == "single" and host_us > gpu_us:
            notes.append(f"{label}: host-bound: {host_us:.0f} us of host time per call (Python and launch) against "
                         f"{gpu_us:.0f} us on the GPU; called in a loop it runs at the host's pace")
    return notes


MIN_PICKS = 2
"""The fewest checked calls a bench shape may come back with: the worker's schedule
(rungs/worker/timed_calls.checked_calls) picks one of calls 1-2 and another by call 4, and every bench shape makes at
least five calls (two warm-up, three timed)."""


def timed_calls(cases: list[dict[str, Any]], *, label: str) -> str | None:
    """What the worker says of its timed calls (rungs/worker/timed_calls.TimedCalls), as far as saying it can fail the
    candidate: a call with no launch of the DSL's, or fewer checked calls than the schedule always picks. The checked
    calls' outputs themselves are judged by the parent's own reference (rungs/ladder/bench_reference.verify_picks)."""
    for c in cases:
        report = c.get("checked") if isinstance(c, dict) else None
        shape = pairs(c.get("shape", {})) if isinstance(c, dict) else "?"
        if not isinstance(report, dict):
            return f"{shape}: the bench phase did not report its checked calls: bench-shape correctness cannot be judged"
        no_launch = report.get("no_launch")
        if isinstance(no_launch, list) and no_launch:
            return (f"{shape}: timed call {no_launch[0]} launched no {label} kernel: the timed calls must run "
                    "the kernels the judged ones did")
        picks = report.get("picks")
        if not isinstance(picks, list) or len(picks) < MIN_PICKS:
            got = len(picks) if isinstance(picks, list) else 0
            return (f"{shape}: the bench phase saved {got} checked call(s), at least {MIN_PICKS} are always picked: "
                    "the timed calls cannot be judged")
        problem = (_schedule(picks, c.get("calls")) or _reservoir(picks, report.get("timed_calls"), c.get("reps"),
                                                                  c.get("calls"))
                   or _slots(picks, c.get("mode"), c.get("calls_per_replay"), c.get("warmup_calls")))
        if problem:
            return f"{shape}: {problem}: the timed calls cannot be judged"
    return None


def _reservoir(picks: list[Any], timed: Any, reps: Any, calls: Any) -> str | None:
    """The timed reservoir's picks (job.TIMED_KEPT, or every timed call where fewer, distinct, all among the last
    `reps` calls: the timed ones) against the timed samples the case reports: a list without them would leave the
    parent only the schedule's and the ring's, crowded at the end."""
    if not _count(timed) or timed < 1 or timed != reps:
        return f"the bench phase drew its timed checks from {timed!r} timed calls, not its {reps!r} timed samples"
    kept = [p.get("call") for p in picks if isinstance(p, dict) and p.get("timed") is True]
    if len(kept) != min(TIMED_KEPT, timed):
        return f"the bench phase kept {len(kept)} of its timed calls for checking, not {min(TIMED_KEPT, timed)}"
    if len(set(kept)) < len(kept) or not all(_count(c) and calls - timed <= c < calls for c in kept):
        return f"the bench phase's timed checks are not {len(kept)} of its last {timed} calls"
    return None


def _slots(picks: list[Any], mode: Any, calls_per: Any, warmup: Any) -> str | None:
    """Which calls of a pick were sampled: the call itself (slot 0) when it was made alone (every call timed call by
    call; the warm-up calls before a CUDA graph's capture); GRAPH_SLOTS distinct calls of a graph replay (all where
    fewer), each of its own input slot."""
    graph = mode == "graph"
    if graph and not (_count(calls_per) and calls_per >= 1 and _count(warmup)):
        return f"the bench phase's graph of {calls_per!r} calls after {warmup!r} warm-up calls is not told"
    for p in picks:
        replay = graph and isinstance(p, dict) and _count(p.get("call")) and p["call"] > warmup
        want, top = (min(GRAPH_SLOTS, calls_per), calls_per) if replay else (1, 1)
        slots = p.get("slots") if isinstance(p, dict) else None
        if (not isinstance(slots, list) or len(slots) != want or len(set(slots)) != want
                or not all(_count(j) and j < top for j in slots)):
            return f"a checked call's sampled calls {slots!r} are not {want} of the {top} it holds"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _schedule(picks: list[Any], calls: Any) -> str | None:
    """The picks against the schedule that made them (rungs/worker/timed_calls.checked_calls): every pick a call
    that was made, and the latest at least half-way (the schedule never more than doubles the index from one pick
    to the next, so a list that stops early left the later calls out of the parent's draw)."""
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 2:
        return "the bench phase did not say how many calls it made"
    made = [p.get("call") if isinstance(p, dict) else None for p in picks]
    if any(not isinstance(i, int) or isinstance(i, bool) or not 1 <= i < calls for i in made):
        return f"a checked call is not one of the {calls} calls made"
    latest = max(made)
    reach = latest + max(2, latest)  # the farthest checked_calls may put the pick after `latest`
    if reach < calls - 1:
        return f"the latest checked call is {latest} of {calls}: the schedule checks one past {reach}"
    return None


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in ("kernel", "autotuned", "grid"):
        if a.get(key) != b.get(key):
            return f"{key} {a.get(key)!r} against {b.get(key)!r}"
    ga, gb = a.get("globals", {}), b.get("globals", {})
    for name in sorted(set(ga) | set(gb)):
        if ga.get(name) != gb.get(name):
            return f"the global {name}={ga.get(name)!r} against {name}={gb.get(name)!r}"
    for name in sorted(set(a["kwargs"]) | set(b["kwargs"])):
        if a["kwargs"].get(name) != b["kwargs"].get(name):
            return f"{name}={a['kwargs'].get(name)!r} against {name}={b['kwargs'].get(name)!r}"
    for i, (x, y) in enumerate(zip(a["args"], b["args"])):
        if x != y:
            return f"argument {i} {x!r} against {y!r}"
    return f"{len(a['args'])} arguments against {len(b['args'])}"


def _plain_python(launches: list[dict[str, Any]]) -> dict[str, str] | None:
    """The first launch argument, global a jit body reads, or launcher the gate described as not on its list
    (rungs/worker/launch_args.py: `{"python": what}`)."""
    def find(value: Any) -> str | None:
        if isinstance(value, dict):  # {"python": what}, or a record's fields ({"TensorDescriptor": {...}})
            if isinstance(value.get("python"), str):
                return value["python"]
            return next((f for f in map(find, value.values()) if f), None)
        if isinstance(value, list):
            return next((f for f in map(find, value) if f), None)
        return None

    for launch in launches:
        values = [launch.get("launcher"), *launch.get("args", []), *launch.get("kwargs", {}).values(),
                  *launch.get("globals", {}).values()]  # a grid function runs on the host alike in both
        for value in values:
            if found := find(value):
                return {"kernel": str(launch.get("kernel")), "python": found}
    return None


def one_build(job_dir: Path, cases: list[Any], interpreted: bool) -> str | None:
    """The launches the compile phase made for each case against those the run phase made for the same inputs.
    On a CPU the run phase is the Triton interpreter and the compile phase the sm_90a build the GPU would run: a
    kernel that chooses its constexprs (or its kernel) by which of the two it is in would be judged on code the
    GPU never runs. A missing log is a failure too: both phases always write one."""
    try:
        built = json.loads((job_dir / LAUNCH_LOG.format(phase="compile")).read_text())
        ran = json.loads((job_dir / LAUNCH_LOG.format(phase="run")).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return f"the launch records of the compile and run phases are missing or unreadable ({type(exc).__name__})"
    labels = {c.id: c.label() for c in cases}
    them = ("the sm_90a build (compile phase) and the interpreted run" if interpreted
            else "the compile phase and the run phase")
    for case_id, compiled in built.items():
        if case_id not in ran:
            continue
        run = ran[case_id]
        where = f"case {case_id} ({labels.get(case_id, '?')})"
        plain = _plain_python(compiled + run) if interpreted else None
        if plain:
            return (f"{where}: {plain['kernel']} was launched with {plain['python']}: the compiled build runs its "
                    "Python at compile time, the interpreter at run time, so it can tell the two apart (a launch on a "
                    "CPU takes tensors, numbers, strings, None, dtypes, Triton's constexprs, jit functions and "
                    "builtins, and tuples or lists of them)")
        if [c["kernel"] for c in compiled] != [c["kernel"] for c in run]:
            return (f"{where}: {them} launched different kernels ({', '.join(c['kernel'] for c in compiled) or 'none'} "
                    f"against {', '.join(c['kernel'] for c in run) or 'none'}): the verdict would be about code the "
                    "GPU does not run")
        for k, (a, b) in enumerate(zip(compiled, run)):
            if a != b:
                return (f"{where}: {them} launched {a['kernel']} differently (launch {k + 1}: "
                        f"{_first_difference(a, b)}): a kernel must not tell the build it runs in from the one it is "
                        "judged in")
    return None
