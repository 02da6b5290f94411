"""The job format: the job a worker is handed (what to import, which DSL, which phases, the case and bench inputs)
and the names and limits of what it writes back for the parent to read.

The ladder (rungs/ladder/climb.py, the compile rung) builds the job; rungs/sandbox/pool.py writes it as job.json; the
worker (rungs/worker/loop.py), its guards and its timing read it back. The one module of rungs/worker/ the parent
imports (tests/test_layout.py checks it). Standard library only: the worker starts in a bare sandbox, without
pydantic.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Job:
    kernel: str = ""
    """The candidate's file (the worker's own copy once handed over)."""
    entry: str = "kernel"
    dsl: str = "triton"
    worker_module: str = ""
    """The DSL backend's worker half, imported by the worker by name; empty: the registry's for `dsl`."""
    device: str = "cpu"
    phases: list[str] = field(default_factory=list)
    """Of "compile", "run", "bench", in order; the worker stops at the first that fails."""
    cases: list[dict[str, Any]] = field(default_factory=list)
    """The correctness cases' input files and limits (rungs/ladder/cases.write_inputs)."""
    bench: list[dict[str, Any]] = field(default_factory=list)
    """The bench shapes, each with the input maker's "path:function" (rungs/ladder/benchmark.bench_entries)."""
    dump_bench: list[dict[str, Any]] = field(default_factory=list)
    """Bench shapes whose kernels the compile phase compiles too (never runs): {"id", "shape", "spec"}, the inputs'
    shapes, strides and dtypes (rungs/timing/inputs.hollow_spec), for inputs holding nothing: the dumps then show the
    specializations that are timed."""
    first_full_bytes: int = 1 << 30
    """The bench phase's first call saves its outputs whole up to this many bytes, else a sample of rows (as a checked
    call does): tens of GB do not go through a file (a worker's files are capped at 4 GiB each)."""
    fresh_seed: int = 0
    """The parent's seed for the fresh input values of every call after the first in the bench phase
    (rungs/timing/fresh.fresh_values, call_seed): the parent rebuilds a checked call's inputs from it."""
    witness: dict[str, Any] | None = None
    """The `witness` phase (run under Nsight Compute by rungs/ladder/profile.py): {"bench_id", "call", "config"}: time
    the bench entry as the bench phase does, with profiling on around call `call` alone (drawn by the parent)."""
    recheck: dict[str, Any] | None = None
    """A case of inputs never seen before, called once more after timing (rungs/worker/timed_calls.after_bench)."""
    allow_torch_compute: bool = False
    timeout_s: float = 0.0
    autotune_s: float = 0.0
    """Seconds the autotune phase may spend timing a declared config space (rungs/worker/bench.tune_space)."""
    prefetch: bool = True
    """Make the bench inputs in a background thread while the candidate compiles and runs."""
    timing: dict[str, Any] | None = None
    """rungs/timing/measure.TimingConfig overrides (tests, probes); None: its defaults."""
    module_init: str | None = None
    """KernelBench: the file (in the job folder) holding ModelNew's constructor arguments and the reference's weights;
    the entry is then built per input signature (rungs/core/kernelbench_problem.ModuleEntry)."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Job":
        """A job from its JSON form; a key this version does not know is an error (a parent and worker of different
        checkouts), not silently dropped."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown job key(s): {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> "Job":
        return cls.from_dict(json.loads(text))

    def but(self, **changes: Any) -> "Job":
        """A copy with some fields changed (the CPU run phase's job: the compile job with phases=["run"])."""
        return dataclasses.replace(self, **changes)


JOB_FILE = "job.json"
"""Where the parent hands a worker its job; the worker reads it and removes it before the candidate's import
(rungs/worker/loop.take_job: it names the parent's secrets)."""


# ---- what the worker writes in its job folder, and the parent reads -------------------------------------------------
TAKEN_FILE = "taken"
"""Made when the worker takes its job: the job's time limit counts from then, not from a hand-over to a worker that
may still be importing torch."""
LAUNCH_LOG = "launches-{phase}.json"
"""Per case, the launches the compile phase (the sm_90a build) and the run phase made (launch_gate.note_launch), which
the parent compares (rungs/ladder/integrity.py)."""
WHERE_FILE = "compile-where.txt"
"""Whether the compile phase is in Triton's compiler or in the candidate's own Python, kept in a file so the parent
can blame the right rung when the process hangs or dies (rungs/ladder/blame.py)."""
STACKS_FILE = "stacks.txt"
"""Every thread's stack, written shortly before the parent's time limit runs out: where a hung job was."""
SECTIONS_FILE = "sections.json"
"""What the sections step's instrumented build (rungs/worker/sections_target.py) writes in its job folder:
{"summary": {...}, "trace": the trace's file name, "dropped": n} or {"error": "..."}."""

POISON_PATTERN = 1234.5
"""What the determinism re-run fills fresh output memory with (the first run uses NaN)."""
OUTPUT_BYTES_FACTOR = 16
"""The worker refuses an output over this many times the expected output's bytes (at least 1 MiB: the limit
rungs/ladder/cases.py writes in each case), before copying or saving it."""
WITNESS_CALLS = 12
"""Calls the witness phase makes after its two warm-up calls; the profiled one is drawn among them by the parent."""


TIMED_KEPT = 8
"""Timed calls kept uniformly at random among all the timed ones (a reservoir: TimedCalls._sample), each marked for
the parent to judge. A kernel gains a faster median only by being fast on over half of the timed calls, so each of
these is one of them with chance over 1/2, wherever in the run they lie: (1/2)^8 = 0.4% at most, where the schedule
and the ring, crowded at the run's end, let one wrong on the timed calls' first 55% and right after escape 67-84% of
climbs (a red-team's simulation, 2026-12-08)."""

GRAPH_SLOTS = 8
"""Calls of a CUDA-graph replay a checked replay's sample takes, each with its own input slot
(rungs/worker/timed_calls.TimedCalls.after_replay)."""
SAMPLE_ELEMS = 1 << 18
"""About how many elements of each output a checked timed call's sample holds before the row floor below
(rungs/worker/timed_calls.TimedCalls)."""
SAMPLE_MIN_ROWS = 128
"""Rows a sample takes at least (all where there are fewer): a cheat that skips (or gets wrong) a fraction f of the
rows is missed by one sample with probability (1 - f)^rows. At 2^18 elements a 4096 x 8192 output's sample held 32
rows: a shortcut skipping every 8th row after its eighth call passed the H100's ladder (2026-12-07; the escape
computed from the checks' own schedule, tests/test_bench_checks.py, 0.4% of climbs); at 128 rows it is about 1e-8."""
SAMPLE_WIDTH = 1 << 14
"""Elements a sample takes of each of its rows where the rows are wider: drawn at random across the whole row
(offsets saved beside them), so 128 rows make at most 2^21 elements whatever the width. Before, a row over 2^20
elements was one row a sample, whole: a batch-first 16 x 64 x 256 x 256 output (and the attention task's B x H x S x D
output) was sampled one batch item at a time, and a late shortcut skipping every 8th item escaped 70-78% of climbs (a
review's figure, 24-160 calls). Elements at random, not slices of the row: a shortcut wrong on one band of every row
(a channel, a head) is in no slice but the band's own, and in about f of any random draw of the row's elements."""


def row_width(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, elements a row) of an output of `shape` as a sample sees it: dimension 0 by the rest (a 0-d output is
    one row of one)."""
    return (shape[0] if shape else 1), math.prod(shape[1:])


def is_wide(shape: tuple[int, ...]) -> bool:
    """Whether a sample of an output of `shape` takes SAMPLE_WIDTH random elements of each row rather than whole rows
    (with their offsets in the row beside them). From the shape alone: the parent's contract says which."""
    return row_width(shape)[1] > SAMPLE_WIDTH


def sample_rows(shape: tuple[int, ...], elems: int = SAMPLE_ELEMS) -> int:
    """How many rows a sample of an output of `shape` takes: as many as fit in `elems` elements (of SAMPLE_WIDTH a
    row where rows are wider) and at least SAMPLE_MIN_ROWS; at most all. The worker samples that many; the parent
    (rungs/ladder/bench_reference.py) expects that many from its own reference's shape: the sample's contract is the
    parent's."""
    rows, rest = row_width(shape)
    width = min(rest, SAMPLE_WIDTH)
    return rows if width == 0 else min(rows, max(elems // width, SAMPLE_MIN_ROWS))


SHAPE_SLOTS = 64
"""A sample's record of its output's shape: this many integers, the dimensions then -1s (torch has at most 64), so
the parent's contract for it is fixed and an output of another rank is told as such, not as a malformed file."""


def shape_record(shape: tuple[int, ...]) -> list[int]:
    return [*shape, *[-1] * (SHAPE_SLOTS - len(shape))]


def take_rows(t: Any, rows: Any, offsets: Any = None) -> Any:
    """Rows `rows` (a 1-D int64 tensor on t's device) of `t` as a (len(rows), elements a row) tensor, or with
    `offsets` ((len(rows), k) int64, each in [0, elements a row)) those elements of each, gathered without a copy of
    `t` whatever its strides (torch.take reads it in its logical order): the worker's sample of a call's output and
    the parent's of its reference are taken by this one function. Imports torch when called."""
    _, rest = row_width(tuple(t.shape))
    if offsets is None:
        return (t.reshape(1) if t.dim() == 0 else t).index_select(0, rows).reshape(rows.numel(), rest)
    import torch

    return torch.take(t, rows.unsqueeze(1) * rest + offsets)
