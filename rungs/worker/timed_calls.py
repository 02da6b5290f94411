"""The timed calls' checks, in the candidate's process: every call alike (`TimedCalls`); which ones the parent checks is
drawn after each returned (`checked_calls`), and their sampled outputs are saved for the parent, which rebuilds their
fresh inputs and judges them itself. After timing, `after_bench()` runs the tamper check, runs the entry once more on
inputs never seen before (the parent compares them with the reference) and times the timing loop's own overhead on the
host, for the wall-clock cross-check.
"""
from __future__ import annotations

import collections
import os
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from rungs.timing.devices import device_for
from rungs.timing.measure import TimingConfig, collect
from rungs.worker.calls import as_outputs, call_entry, save_outputs
from rungs.worker.hot_path import light_watch
from rungs.worker.job import GRAPH_SLOTS, SAMPLE_WIDTH, TIMED_KEPT, Job, is_wide, row_width, sample_rows, shape_record, take_rows
from rungs.worker.launch_gate import launch_count
from rungs.worker.tamper import check


# ---- checked calls among the timed ones ------------------------------------------------------------------------
RECENT_P = 0.1
"""Besides the schedule, each later call is picked with this chance into a ring of the last RECENT_KEPT (TimedCalls._sample)."""
RECENT_KEPT = 8


def checked_calls(rng: random.Random, first_span: int = 2) -> Iterator[int]:
    """Indices of the calls (0 = the first call, then warm-up and timed calls in order) whose outputs are checked:
    the first call, one of the next `first_span` (always reached), then gaps drawn at random and growing with the
    index, so about log2(n) checks spread over n calls, at places the candidate cannot predict. A kernel that
    behaves for the first calls and cheats later is checked later too; the recheck after timing runs on a shape
    it can tell apart, so it alone would not do."""
    yield 0
    i = 1 + rng.randrange(first_span)
    while True:
        yield i
        i += 1 + rng.randrange(max(2, i))


def poison(outputs: list[Any], inputs: Sequence[Any]) -> None:
    """Fill outputs with NaN (integers with 0x5A) before they go back to the allocator, so the next call's fresh
    output memory most likely holds the poison: elements a call leaves unwritten show, instead of an earlier call's
    right answer. An output that aliases an input is left alone."""
    for o in poisonable(outputs, inputs):
        o.fill_(poison_value(o))


def poisonable(outputs: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
    """The outputs poison() fills (detached): non-empty tensors that share no storage with an input."""
    import torch

    ptrs = {v.untyped_storage().data_ptr() for v in inputs if isinstance(v, torch.Tensor)}
    return [o.detach() for o in outputs
            if type(o) is torch.Tensor and o.numel() and o.untyped_storage().data_ptr() not in ptrs]


def poison_value(o: Any) -> float | int:
    return float("nan") if o.is_floating_point() else 0x5A


class TimedCalls:
    """The worker's side of bench-shape correctness, for one bench shape (rungs/timing/measure.measure calls it
    around every call).

    The first call sees the bench inputs as made; it runs under the torch-op trace and its outputs are saved whole,
    for the parent to compare with its cached reference at the bench shape. Every later call sees fresh input values
    (rungs/timing/fresh.fresh_values) and is made the same way: no trace, no flag, no argument tells one from another.
    Only once a call has returned and its sample has ended is it decided, from a generator seeded here from os.urandom,
    whether it is one the parent checks (checked_calls: about log2(n) of n calls, spread to the end); the
    outputs of every call are then sampled the same way (rows drawn at random on the device, job.sample_rows,
    and elements of each at random where rows are wide),
    and the sample kept only for the calls picked, so neither the call nor the time after it shows a pick. At the
    end the picked samples are written, one file each; the parent rebuilds those calls' inputs from its seed,
    computes its own reference and compares the rows (rungs/ladder/bench_reference.verify_picks). Nothing this object
    decides is evidence: the parent counts the picks, bounds every file and judges only what it recomputes."""

    def __init__(self, job: Job, bench_id: str, job_dir: Path, save: bool = True) -> None:
        import torch

        self.job, self.bench_id, self.job_dir = job, bench_id, job_dir
        self.save = save
        """False while autotuning: nothing is written (points other than the winner are not judged at bench
        shapes; the winner is, in the bench phase)."""
        self.rng = random.Random(os.urandom(16))
        self.plan = checked_calls(self.rng)
        self.next = next(self.plan)
        self.rows = torch.Generator(device="cuda" if job.device == "cuda" else "cpu")
        self.rows.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self.graph: list[list[Any]] = []
        self._poison_groups: list[tuple[list[Any], float | int]] = []  # set with the graph (graph_outputs)
        self._poison_each: list[Any] = []
        # (call, the slots sampled, each slot's sample): one slot a call, GRAPH_SLOTS of a graph replay's calls
        self.kept: list[tuple[int, list[int], list[list[Any]]]] = []
        self.recent: collections.deque[tuple[int, list[int], list[list[Any]]]] = collections.deque(maxlen=RECENT_KEPT)
        self.timing = False
        """Set by measure when the timed samples start (start_timing): warm-up is over."""
        self.timed_seen = 0
        self.timed: list[tuple[int, list[int], list[list[Any]]]] = []
        self.report: dict[str, Any] = {"first": None, "picks": [], "no_launch": []}

    def _picked(self, i: int) -> bool:
        while self.next < i:
            self.next = next(self.plan)
        return i == self.next

    def call(self, dev: Any, fn: Callable[..., Any], args: Sequence[Any], i: int) -> Any:
        before = launch_count()
        if i == 0:  # the first call is known to be judged whatever is done here: traced
            with light_watch(self.job):
                out = dev.call(fn, args)
        else:
            out = dev.call(fn, args)
        if launch_count() == before:
            self.report["no_launch"].append(i)
        return out

    def after(self, out: Any, args: Sequence[Any], i: int) -> None:
        import torch

        outputs = as_outputs(out)
        if i == 0:
            if self.save:
                name = f"out-{self.bench_id}-first.pt"
                size = sum(o.numel() * o.element_size() for o in outputs if type(o) is torch.Tensor)
                # Whole up to job.first_full_bytes, else a sample of rows (the parent expects which from its own
                # reference's size): tens of GB would not go through a file.
                save_outputs(outputs if size <= self.job.first_full_bytes else self._rows(outputs), self.job_dir / name)
                self.report["first"] = name
        else:
            self._sample([(0, outputs)], i)
        poison(outputs, args)

    def _sample(self, groups: list[tuple[int, list[Any]]], i: int) -> None:
        """Rows of every output drawn at random, gathered on the device: the same work for every call; kept when the
        call is picked (decided here, after the call): by the schedule, or by a coin (RECENT_P) into a ring of the
        last RECENT_KEPT such calls. The schedule's picks thin out as calls go on, and where warm-up ends is no
        secret (a kernel under 400 us warms up for 500 calls, then 20 timed ones when stable): a cheat active only
        in the timed calls met no pick there most runs (a review's simulation: caught about 10% of the time with
        the parent's latest-pick rule, 2% before). The ring keeps picks among the last calls, whichever they are;
        from start_timing on, a reservoir keeps TIMED_KEPT of the timed calls, uniform over all of them, wherever a
        cheat's wrong calls lie among them. `groups`: (input slot, outputs) of each call sampled: one, or
        GRAPH_SLOTS of a graph replay's."""
        picked = self._picked(i)
        slots = [slot for slot, _ in groups]
        parts = [self._rows(outputs) for _, outputs in groups]
        if picked:
            self.kept.append((i, slots, parts))
        elif self.rng.random() < RECENT_P:
            self.recent.append((i, slots, parts))
        if self.timing:  # reservoir sampling: every timed call so far is in it with the same chance
            self.timed_seen += 1
            if len(self.timed) < TIMED_KEPT:
                self.timed.append((i, slots, parts))
            else:
                j = self.rng.randrange(self.timed_seen)
                if j < TIMED_KEPT:
                    self.timed[j] = (i, slots, parts)

    def start_timing(self) -> None:
        """The timed samples start now (rungs/timing/measure.measure, after warm-up): calls from here on go through
        the reservoir of TIMED_KEPT."""
        self.timing = True

    def _rows(self, outputs: list[Any]) -> list[Any]:
        """[each output's sample..., each output's row indices..., each output's offsets in its rows..., each
        output's shape...]: job.sample_rows rows of each output, whole, or SAMPLE_WIDTH elements of each drawn at
        random across the row where rows are wider (job.is_wide; offsets empty otherwise), gathered by
        job.take_rows. The shape is the call's claim, held to the parent's."""
        import torch

        parts: list[Any] = []
        rows: list[Any] = []
        offsets: list[Any] = []
        shapes: list[Any] = []
        for o in outputs:
            if type(o) is not torch.Tensor:  # one place in each list: the parent's contract refuses it, by its number
                for part in (parts, rows, offsets, shapes):
                    part.append(None)
                continue
            shape = tuple(o.shape)
            n, (m, rest) = sample_rows(shape), row_width(shape)
            # Without replacement where it matters: drawn with replacement, 16 draws of 16 rows missed the two rows a
            # shortcut skipped about one time in eight (a CI run saw a late shortcut pass its three judged picks).
            # All rows when they fit; a permutation's first n when n is a good part of them; else independent draws,
            # whose repeats are then few (a permutation of a billion rows would cost gigabytes each call).
            if n >= m:
                r = torch.arange(m, device=o.device)
            elif 4 * n >= m:
                r = torch.randperm(m, generator=self.rows, device=o.device)[:n]
            else:
                r = torch.randint(0, m, (n,), generator=self.rows, device=o.device)
            at = (torch.randint(0, rest, (r.numel(), SAMPLE_WIDTH), generator=self.rows, device=o.device)
                  if is_wide(shape) else None)
            parts.append(take_rows(o, r, at))
            rows.append(r)
            offsets.append(at if at is not None else torch.empty(0, dtype=torch.int64, device=o.device))
            shapes.append(torch.tensor(shape_record(shape), dtype=torch.int64))
        return parts + rows + offsets + shapes

    def graph_outputs(self, outputs: list[Any], sets: list[list[Any]]) -> None:
        """The replay's outputs (the graph's own buffers, the same every replay) and what before_replay poisons: each
        output once, not one that is an input (as poison() does), worked out here once rather than per replay."""
        import torch

        self.graph = [as_outputs(o) for o in outputs]
        todo = {(o.data_ptr(), tuple(o.shape), o.stride(), o.dtype): o
                for o in poisonable([o for outs in self.graph for o in outs], [v for s in sets for v in s])}
        # contiguous outputs together (a multi-tensor op refuses a tensor whose elements share memory: an expanded one)
        plain = [o for o in todo.values() if o.is_contiguous() and o.dtype is not torch.bool]
        floats, ints = [o for o in plain if o.is_floating_point()], [o for o in plain if not o.is_floating_point()]
        self._poison_groups = [(g, poison_value(g[0])) for g in (floats, ints) if g]
        chosen = {id(o) for o in plain}
        self._poison_each = [o for o in todo.values() if id(o) not in chosen]

    def before_replay(self) -> None:
        """Every replay's outputs to the poison, in two multi-tensor launches per kind rather than one fill per
        output: a replay holds up to a thousand calls, and this runs before each (outside the timed region)."""
        import torch

        for group, value in self._poison_groups:
            torch._foreach_zero_(group)
            torch._foreach_add_(group, value)
        for o in self._poison_each:
            o.fill_(poison_value(o))

    def after_replay(self, i: int) -> None:
        """GRAPH_SLOTS of the replay's calls (all where fewer), drawn after it, sampled (and kept when the replay is
        picked): their inputs were their own buffers' (slot j of rungs/timing/fresh.call_seed). Several, not one:
        the candidate's Python runs once, at the capture, and a graph wrong on a fraction f of its calls is faster by
        about f on every timed sample; one slot a judged replay met it with chance f (a review's simulation: 42% of
        climbs escaped at f = 10%, 16% at 20%)."""
        if self.graph:
            slots = sorted(self.rng.sample(range(len(self.graph)), min(GRAPH_SLOTS, len(self.graph))))
            self._sample([(j, self.graph[j]) for j in slots], i)

    def finish(self) -> None:
        """The picked calls' samples, one file a slot, with the call and input slots the parent rebuilds them from, and
        whether the call is one of the timed reservoir's; how many timed calls the reservoir drew from."""
        timed = {i for i, _, _ in self.timed}
        picks = {i: (slots, parts) for i, slots, parts in [*self.kept, *self.recent, *self.timed]}
        for i in sorted(picks):
            slots, parts = picks[i]
            names = [f"out-{self.bench_id}-pick{i}-{slot}.pt" for slot in slots]
            if self.save:
                for name, sample in zip(names, parts):
                    save_outputs(sample, self.job_dir / name)
            self.report["picks"].append({"call": i, "slots": slots, "files": names if self.save else None,
                                         "timed": i in timed})
        self.report["timed_calls"] = self.timed_seen
        self.kept.clear()
        self.recent.clear()
        self.timed.clear()


# ---- after timing --------------------------------------------------------------------------------------------
_RECHECK: dict[str, list[Any]] = {}
"""The recheck case's inputs, read by take_recheck before the candidate's import; its file is gone by then."""


def take_recheck(job: Job, job_dir: Path) -> None:
    """Read the recheck case's inputs into this process and remove their file, before any code of the candidate's runs
    (rungs/worker/loop.take_job). Inputs "never seen before" must not be in the job folder the candidate can read from
    its first import: it would answer them there, once, honestly, and serve that answer after timing."""
    import torch

    if job.recheck is None:
        return
    path = job_dir / job.recheck["inputs"]
    _RECHECK[job.recheck["inputs"]] = torch.load(path, weights_only=True)
    path.unlink()


def after_bench(fn: Callable[..., Any], job: Job, job_dir: Path, on_cuda: bool,
                cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Once the bench shapes are timed: the tamper check, the host overhead of one timing sample (for the
    parent's wall-clock cross-check), and the entry once more on the job's `recheck` case (inputs of a test
    shape never seen before), in the timed calls' state, saved as out-<id>-after-bench.pt for the parent to
    compare with the reference."""
    import torch
    import torch.utils.deterministic

    check("after timing")
    reps = max((c.get("reps", 0) for c in cases), default=0)
    idle_us = host_idle_sample_us(job, reps) if reps else None
    for c in cases:
        c["host_idle_us"] = idle_us
    extra: dict[str, Any] = {}
    first = job.recheck
    if first is not None:
        device = "cuda" if on_cuda else "cpu"
        inputs = [v.to(device) if isinstance(v, torch.Tensor) else v
                  for v in _RECHECK.pop(first["inputs"])]  # read by take_recheck (its file is gone)
        # In the timed calls' state (rungs/worker/bench.bench_entry), not the run phase's: switching deterministic
        # mode back on here would tell the kernel this call is judged.
        outputs = call_entry(fn, inputs, job, on_cuda, first.get("max_output_bytes"))
        name = f"out-{first['id']}-after-bench.pt"
        save_outputs(outputs, job_dir / name)
        extra["recheck"] = {"id": first["id"], "file": name}
    return extra


def host_idle_sample_us(job: Job, reps: int) -> float:
    """Host wall time of one timing sample with nothing launched (flush, events, device-wide sync, the stopping
    rule's statistics), by the host clock: what a sample costs beyond the timed call."""
    cfg = TimingConfig.from_dict(job.timing)
    dev = device_for(job.device, cfg)
    n = max(5, min(reps, 300))
    fixed = TimingConfig(**{**cfg.as_dict(), "min_reps": n, "max_reps": n, "rel_se": -1.0, "cap_s": 60.0})

    def idle() -> float:
        dev.flush()
        a = dev.mark(0)
        b = dev.mark(1)
        dev.sync()
        c = dev.mark(2)
        dev.wait(c)
        dev.us(a, b), dev.us(b, c)
        return dev.us(a, c)

    t0 = time.perf_counter()
    samples, _ = collect(idle, fixed)
    seconds = time.perf_counter() - t0
    dev.release()
    return seconds * 1e6 / len(samples)
