"""Bench-shape correctness, the harness's side: its own reference at every bench shape, compared with the outputs
of the candidate's first timed call there and with samples of timed calls the worker picked only after they had run
(rungs/worker/timed_calls.TimedCalls), on the fresh input values those calls saw, which this process rebuilds from its
own seed.

Runs in a trusted process of its own, never in the candidate's, after the worker has exited (so the GPU memory is
free): a server that judges one candidate's job after another (`--serve FD`, rungs/ladder/reference_server.py: Python,
torch and the task's Model paid once per task, not per candidate), or one job (`python -m rungs.ladder.bench_reference
JOB_DIR`). The
reference is the task's own function on the bench inputs (made from the same seeds the worker used), upcast to float64,
on the GPU; where float64 does not fit, the inputs are split along the dimension the output shares with them (found and
verified on a small test shape), and only where even one slice does not fit is float32 used. References are
cached per bench entry (they depend only on the task's files and the seed), as float32 unless the task's
dtype is wider. The comparison is rungs.ladder.metrics.assess, the one every judge uses, with the task's tolerances.
"""
from __future__ import annotations

import gc
import io
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from rungs.ladder import metrics as m
from rungs.ladder import outputs
from rungs.timing import gpu_lock
from rungs.timing.fresh import alt_entry, call_seed, fresh_values, input_mask, mixable
from rungs.timing.inputs import draws_on_device, load_function, make, torch_dtype
from rungs.core.atomic import atomic_write
from rungs.worker.job import GRAPH_SLOTS, SAMPLE_WIDTH, SHAPE_SLOTS, TIMED_KEPT, is_wide, row_width, sample_rows, shape_record, take_rows
from rungs.core.precision import ieee_float32
from rungs.sandbox.isolation import rss_bytes
from rungs.sandbox.pool import OUTPUT_NAME


def _upcast(value: Any, dtype: torch.dtype, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.to(device)
        return value.to(dtype) if value.is_floating_point() else value
    return value


def _as_list(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def split_plan(reference: Callable[..., Any], inputs: Sequence[Any]) -> list[int]:
    """Which inputs may be cut along dimension 0 (the output's leading dimension, shared with them) so that the
    reference of each slice is that slice of the reference: checked, not assumed, on these (small) inputs.
    Returns [] when the output has no such dimension or cutting changes the answer."""
    with torch.no_grad():
        full = _as_list(reference(*[_upcast(v, torch.float64, "cpu") for v in inputs]))
    rows = full[0].shape[0] if full and full[0].dim() else 0
    plan = [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == rows]
    if rows < 2 or not plan:
        return []
    try:
        halves = reference_on(reference, inputs, "cpu", plan, max_rows=(rows + 1) // 2)
    except Exception:  # noqa: BLE001 - a reference that cannot be cut
        return []
    same = all(h.shape == f.shape and torch.allclose(h, f, rtol=1e-12, atol=1e-12, equal_nan=True)
               for h, f in zip(halves, full))
    return plan if same else []


def reference_on(reference: Callable[..., Any], inputs: Sequence[Any], device: str, plan: list[int],
                 max_rows: int | None = None, dtype: torch.dtype = torch.float64,
                 rows_of: Sequence[tuple[torch.Tensor, torch.Tensor | None]] | None = None) -> list[torch.Tensor]:
    """The reference on `device` in `dtype`, computed in slices of at most `max_rows` along dimension 0 of the
    inputs in `plan` (None: all at once); on running out of device memory, the slices are halved, down to one row,
    before the caller falls back to float32. Results come back on the CPU; with `rows_of` (rows and offsets in them,
    or None for whole rows, per output: rows_at), only those of each, picked on the device (a sample of a 7.5 GB output need not cross to the host
    whole: host memory stays the sample's). Only with an empty plan (one slice)."""
    assert rows_of is None or not plan
    rows = next((inputs[i].shape[0] for i in plan), 1)
    step = max_rows or rows
    while True:
        try:
            parts: list[list[torch.Tensor]] = []
            for start in range(0, rows, step):
                args = [v[start:start + step] if i in plan else v for i, v in enumerate(inputs)] if plan else list(inputs)
                with torch.no_grad(), ieee_float32():  # a float32 fallback is IEEE, never TF32 (rungs/core/precision.py)
                    out = _as_list(reference(*[_upcast(v, dtype, device) for v in args]))
                if rows_of is not None:
                    out = [rows_at(o, r, at) for o, (r, at) in zip(out, rows_of, strict=True)]
                parts.append([o.to("cpu") for o in out])
                del out
                if not plan:
                    break
            return [torch.cat([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in range(len(parts[0]))]
        except torch.OutOfMemoryError:
            if device != "cpu":
                torch.cuda.empty_cache()
            if not plan or step == 1:
                raise
            step = max(1, step // 2)


def rows_at(t: torch.Tensor, rows: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
    """Rows `rows` of `t`, whole or the elements at `offsets` in each (a wide output's sample), taken as the worker
    takes them (job.take_rows), where `t` is."""
    return take_rows(t, rows.to(t.device), None if offsets is None else offsets.to(t.device))


def in_float64_else_32(compute: Callable[[torch.dtype], Any]) -> tuple[Any, bool]:
    """compute(float64), else compute(float32) where float64 ran out of device memory; (result, in float64). The
    retry runs once the failed attempt is gone: inside the `except`, its traceback would still hold that attempt's
    frames and their device tensors, and the retry would run out of memory too."""
    try:
        return compute(torch.float64), True
    except torch.OutOfMemoryError:
        pass
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return compute(torch.float32), False


def reference_for(entry: dict[str, Any], reference_ref: str, plan: list[int], device: str,
                  cache: Path | None, inputs: list[Any]) -> tuple[list[torch.Tensor], str]:
    """The cached reference of one bench entry, else computed now on `inputs` (the entry's draw, made once by the
    caller) in float64, or float32 where that does not fit."""
    import hashlib

    h = hashlib.sha256((json.dumps(entry, sort_keys=True) + reference_ref).encode())
    for ref in (reference_ref, entry["inputs"]):  # a changed reference or input maker is a new reference
        file = Path(ref.rpartition(":")[0])
        h.update(file.read_bytes() if file.is_file() else b"")
    if draws_on_device(entry):  # drawn on the device: its values are that GPU model's and that torch's
        h.update(f"{device} {torch.__version__} {_device_name(device)}".encode())
    path = cache / f"bench-ref-{h.hexdigest()[:16]}.pt" if cache else None
    if path is not None and path.is_file():
        return torch.load(path, weights_only=True), "cached"
    reference = load_function(reference_ref)
    refs, wide = in_float64_else_32(lambda dtype: reference_on(reference, inputs, device, plan, dtype=dtype))
    how = "float64" if wide else "float32 (float64 did not fit)"
    keep = torch.float64 if entry["dtype"] == "float64" else torch.float32
    refs = [r.to(keep) if r.is_floating_point() else r for r in refs]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        torch.save(refs, buffer)
        atomic_write(path, buffer.getvalue())
    return refs, how


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else device


def bench_inputs(entry: dict[str, Any], cache: Path | None, device: str) -> list[Any]:
    """One bench entry's inputs as the input maker makes them (the worker made the same from the same seed): drawn
    on `device` where the maker draws there itself (rungs/timing/inputs.py; never kept: drawing again is fast), else
    on the host, memory-mapped from `cache` when kept there (a checked call's rows touch only their pages), else
    made now and kept (the maker's CPU draw of a large shape takes seconds)."""
    import hashlib

    if draws_on_device(entry):
        return make(entry, device)

    h = hashlib.sha256(json.dumps(entry, sort_keys=True).encode())
    file = Path(entry["inputs"].rpartition(":")[0])
    h.update(file.read_bytes() if file.is_file() else b"")
    path = cache / f"bench-inputs-{h.hexdigest()[:16]}.pt" if cache else None
    if path is not None and path.is_file() and path.stat().st_size <= INPUTS_CACHE_BYTES + (1 << 20):
        made = torch.load(path, weights_only=True, mmap=True)
    else:
        made = make(entry)
        size = sum(v.untyped_storage().nbytes() for v in made if isinstance(v, torch.Tensor))
        if path is not None and size <= INPUTS_CACHE_BYTES:
            path.parent.mkdir(parents=True, exist_ok=True)
            buffer = io.BytesIO()
            torch.save(made, buffer)
            atomic_write(path, buffer.getvalue())
    return list(made)


INPUTS_CACHE_BYTES = 4 << 30
"""Bench inputs up to this size are kept in the cache; larger ones (KernelBench's tens of GB) are drawn again."""


VERIFY_PICKS = 3
"""How many of a bench shape's checked calls this process recomputes besides the timed reservoir's (all of those,
job.TIMED_KEPT): the latest and the rest drawn here after the worker has exited: the worker cannot know which of its
picks will be judged, nor when a call is made whether it will be picked."""


Meta = list[tuple[tuple[int, ...], torch.dtype]]
"""The reference's outputs at a bench shape as (shape, dtype): what the parent expects, from its own reference."""


def meta_of(refs: list[torch.Tensor]) -> Meta:
    return [(tuple(r.shape), r.dtype) for r in refs]


def output_meta(reference: Callable[..., Any], base: list[Any], plan: list[int], device: str) -> Meta | None:
    """The reference's output shapes at the bench shape without computing the whole reference: from one row where the
    split plan cuts the inputs' rows (the output's rows are theirs), else from the reference run on meta tensors
    (shapes only, no data: a whole-tensor normalization such as KernelBench's 37_FrobeniusNorm_ cannot be cut by
    rows, and its 7.5 GB output is sampled by the worker all the same). None where neither works (a reference that
    reads values, e.g. `.item()`): the caller computes the reference whole."""
    if not plan:
        try:
            with torch.no_grad():
                out = _as_list(reference(*[torch.empty_like(v, device="meta") if isinstance(v, torch.Tensor) else v
                                           for v in base]))
        except Exception:  # noqa: BLE001 - not every reference runs on meta tensors
            return None
        if not all(isinstance(o, torch.Tensor) for o in out):
            return None
        return [(tuple(o.shape), o.dtype) for o in out]
    one = reference_on(reference, fresh_rows(base, base, 0, plan, torch.tensor([0]), device), device, [])
    rows = base[plan[0]].shape[0]
    return [((rows, *o.shape[1:]), o.dtype) for o in one]


def _sample_contract(meta: Meta, dtype: torch.dtype) -> list[outputs.Expected]:
    """A sample's file (rungs/worker/timed_calls.TimedCalls._rows): each output's sampled rows (whole, or SAMPLE_WIDTH
    elements of each where rows are wider), their row indices, their offsets in the rows (empty for whole rows) and
    the output's shape as the call gave it; all from the parent's own reference's shapes."""
    shapes = [shape for shape, _ in meta]
    rows = [sample_rows(s) for s in shapes]
    wide = [is_wide(s) for s in shapes]
    samples = [outputs.Expected((n, SAMPLE_WIDTH if w else row_width(s)[1]), e.dtype)
               for n, s, w, e in zip(rows, shapes, wide, _whole_contract(meta, dtype))]
    return (samples + [outputs.Expected((n,), torch.int64) for n in rows]
            + [outputs.Expected((n, SAMPLE_WIDTH) if w else (0,), torch.int64) for n, w in zip(rows, wide)]
            + [outputs.Expected((SHAPE_SLOTS,), torch.int64) for _ in shapes])


def _whole_contract(meta: Meta, dtype: torch.dtype) -> list[outputs.Expected]:
    """The outputs whole, in the task's dtype (the float64 reference's floats; integers stay as the reference has them)."""
    return [outputs.Expected(shape, dtype if d.is_floating_point else d) for shape, d in meta]


def fresh_rows(base: list[Any], alt: list[Any], seed: int, plan: list[int], rows: torch.Tensor,
               device: str) -> list[Any]:
    """A checked call's inputs (rungs/timing/fresh.fresh_values of the two host draws), cut to `rows` along dimension 0
    for the inputs the split plan cuts: the masks are drawn whole on `device`, as the worker drew them, and then cut, so
    the values are the call's own; only those rows of the draws are read."""
    made: list[Any] = []
    for i, (b, a) in enumerate(zip(base, alt)):
        if not isinstance(b, torch.Tensor):
            made.append(b)
            continue
        cut = i in plan
        if cut:
            b_rows = b.index_select(0, rows.to(b.device))  # the draws are on the host, or on `device` already
        if not mixable(b, a):
            made.append((b_rows if cut else b).to(device))
            continue
        mask = input_mask(b.shape, device, seed, i)
        if cut:
            mask, a, b = mask.index_select(0, rows.to(device)), a.index_select(0, rows.to(a.device)), b_rows
        made.append(torch.where(mask, b.to(device), a.to(device)))
    return made


def _expected_rows(reference: Callable[..., Any], base: list[Any], alt: list[Any], seed: int, plan: list[int],
                   rows: torch.Tensor, offsets: torch.Tensor | None, shape: tuple[int, ...],
                   device: str) -> torch.Tensor | None:
    """The reference's single output (of `shape`) at `rows` only (whole, or the elements at `offsets` in each),
    computed on those rows of the call's inputs (a checked call's sample holds a few rows: its reference need not be
    the whole bench shape's); the sample is taken on the device. None when the reference cannot be cut so, or
    cutting failed: the caller computes the whole reference instead."""
    if not plan:
        return None
    uniq, where = torch.unique(rows, return_inverse=True)

    def on_rows(*args: Any) -> Any:  # the rows' places hold only where the output has the whole's row shape
        out = _as_list(reference(*args))
        if len(out) != 1 or tuple(out[0].shape) != (uniq.numel(), *shape[1:]):
            raise ValueError("the reference on some rows is not those rows of its output")
        return out

    try:
        inputs = fresh_rows(base, alt, seed, plan, uniq, device)
        out, _ = in_float64_else_32(lambda dtype: reference_on(on_rows, inputs, device, [], dtype=dtype,
                                                               rows_of=[(where, offsets)]))
    except Exception:  # noqa: BLE001 - the whole reference is the fallback, never a verdict
        return None
    return out[0]  # one output: on_rows let no other through


def check_sample(entry: dict[str, Any], file: str, where: str, job_dir: Path, reference: Callable[..., Any],
                 plan: list[int], device: str, limits: dict[str, float], seed: int, base: list[Any], alt: list[Any],
                 meta: Meta) -> str | None:
    """One saved sample of rows (a checked call's, or a first call too large to save whole) against this process's
    reference at those rows, on the inputs that call saw (rungs/timing/fresh.fresh_values of `base` and `alt` with
    `seed`; the first call: `alt` is `base`). What is broken, or None."""
    n = len(meta)
    try:
        loaded = outputs.load(job_dir / file, _sample_contract(meta, torch_dtype(entry["dtype"])),
                              what="sampled output")
    except outputs.OutputRefused as exc:
        return f"{where}: {exc}"
    samples, rows, offsets, claimed = loaded[:n], loaded[n:2 * n], loaded[2 * n:3 * n], loaded[3 * n:]
    for i, (r, at, c) in enumerate(zip(rows, offsets, claimed)):
        shape = tuple(meta[i][0])
        if c.tolist() != shape_record(shape):  # the call's output whole, not only the rows sampled
            told = c.tolist()
            told = told[:told.index(-1)] if -1 in told else told
            return f"{where}: output {i} has shape {told}, expected {list(shape)}"
        m, rest = row_width(shape)
        if r.numel() and (int(r.min()) < 0 or int(r.max()) >= m):
            return f"{where}: output {i}'s sampled rows are out of range"
        if at.numel() and (int(at.min()) < 0 or int(at.max()) >= rest):
            return f"{where}: output {i}'s sampled elements are out of range"
        # Which rows and elements is the worker's choice (rungs/worker/timed_calls.TimedCalls._rows), so at least
        # its form is held to the rule: every row, in order, where all fit; distinct rows where the sample is a good
        # part of them.
        k = r.numel()
        if k >= m and not torch.equal(r.cpu(), torch.arange(m)):
            return f"{where}: output {i}'s sample is not its {m} rows in order"
        if k < m <= 4 * k and torch.unique(r).numel() != k:
            return f"{where}: output {i}'s sampled rows repeat where they must be distinct"
    offs = [at if is_wide(shape) else None for at, (shape, _) in zip(offsets, meta)]
    cut = (_expected_rows(reference, base, alt, seed, plan, rows[0], offs[0], meta[0][0], device)
           if n == 1 and meta[0][0] else None)
    if cut is not None:
        expected = [cut]
    else:
        on = [[v.to(device) if isinstance(v, torch.Tensor) else v for v in d] for d in (base, alt)]
        inputs = fresh_values(on[0], on[1], seed)
        if plan:  # computed in slices of rows, the sampled ones taken from the whole
            full, _ = in_float64_else_32(lambda dtype: reference_on(reference, inputs, device, plan, dtype=dtype))
            expected = [rows_at(f, r, at) for f, r, at in zip(full, rows, offs)]
            del full
        else:  # computed whole, only the sampled rows leaving the device
            expected, _ = in_float64_else_32(lambda dtype: reference_on(reference, inputs, device, [], dtype=dtype,
                                                                        rows_of=list(zip(rows, offs))))
        del inputs, on
    if len(expected) != len(samples):
        return f"{where}: {len(samples)} sampled outputs where the reference gives {len(expected)}"
    for i, (sample, want) in enumerate(zip(samples, expected)):
        broken = judge_outputs([sample], [want], entry["dtype"], limits, device)
        if broken:
            return f"{where}, output {i}: {_in_output(broken[0], meta[i][0], rows[i], offs[i])}"
    return None


_SAMPLE_PLACE = re.compile(r"(first at|worst element) \[(\d+), (\d+)\]")


def _in_output(message: str, shape: tuple[int, ...], rows: torch.Tensor, offsets: torch.Tensor | None) -> str:
    """A sample's verdict with its places ([sampled row, element in the sample]) told as the output's own indices:
    the row sampled, and the element's offset in that row (its offset drawn, for a wide output) unravelled."""
    def place(match: re.Match[str]) -> str:
        a, b = int(match.group(2)), int(match.group(3))
        if not shape:
            return f"{match.group(1)} []"
        offset = int(offsets[a, b]) if offsets is not None else b
        index: list[int] = []
        for size in reversed(shape[1:]):
            index.append(offset % size)
            offset //= size
        return f"{match.group(1)} {[int(rows[a]), *reversed(index)]}"

    return _SAMPLE_PLACE.sub(place, message)


def judged_picks(picks: list[dict[str, Any]], rng: Any) -> list[dict[str, Any]]:
    """The picks this process judges: the latest always, every one of the timed reservoir's (uniform over the timed
    calls: a cheat fast on over half of them to move the median meets one with chance over 1/2 each), and
    VERIFY_PICKS - 1 of the rest drawn with `rng`. Drawn all at random, a cheat that warms up first (a cache filling
    over the first calls served stale answers from about the fifth) was judged only on its early calls about one
    time in eighty (three of ~nine picks, the three earliest), and passed when those missed (a CI run saw it)."""
    ordered = sorted(picks, key=lambda p: p["call"])
    latest = ordered[-1:]
    timed = [p for p in ordered[:-1] if p.get("timed") is True][:TIMED_KEPT]  # bounded whatever the list says
    rest = [p for p in ordered[:-1] if p.get("timed") is not True]
    return latest + timed + rng.sample(rest, min(VERIFY_PICKS - 1, len(rest)))


def verify_picks(entry: dict[str, Any], picks: list[Any], job_dir: Path, reference: Callable[..., Any],
                 plan: list[int], device: str, limits: dict[str, float], fresh_seed: int, cache: Path | None,
                 rng: Any, meta: Meta, base: list[Any]) -> tuple[list[str], list[int]]:
    """The worker's checked calls judged_picks chooses (the latest, the timed reservoir's, more drawn with `rng`), each
    against this process's reference on the inputs that call saw: (what is broken, the calls judged). `meta`: the reference's outputs at this bench shape
    (the samples' contract: the parent's own); `base`: the entry's first draw (bench_inputs), the second is read here."""
    good = [p for p in picks if isinstance(p, dict) and _is_int(p.get("call")) and _slot_files(p)]
    if len(good) < len(picks):
        return ["the bench phase's list of checked calls is malformed"], []
    chosen = judged_picks(good, rng)
    if not chosen:
        return [], []
    alt = bench_inputs(alt_entry(entry), cache, device)
    judged: list[int] = []
    for pick in sorted(chosen, key=lambda p: p["call"]):
        several = len(pick["slots"]) > 1  # a graph replay's calls: each judged on the inputs of its own slot
        for slot, file in zip(pick["slots"], pick["files"]):
            where = f"timed call {pick['call']}{f' (its replay call {slot})' if several else ''}"
            problem = check_sample(entry, file, f"{where} (fresh inputs, picked after it ran)", job_dir, reference,
                                   plan, device, limits, call_seed(fresh_seed, pick["call"], slot), base, alt, meta)
            if problem:
                return [problem], judged
        judged.append(pick["call"])
    return [], judged


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _slot_files(pick: dict[str, Any]) -> bool:
    """A pick's slots and files in their form: as many files as slots (GRAPH_SLOTS at most, distinct, from 0), each
    file a name the worker may write."""
    slots, files = pick.get("slots"), pick.get("files")
    return (isinstance(slots, list) and isinstance(files, list) and 1 <= len(slots) == len(files) <= GRAPH_SLOTS
            and all(_is_int(s) and s >= 0 for s in slots) and len(set(slots)) == len(slots)
            and all(isinstance(f, str) and OUTPUT_NAME.fullmatch(f) for f in files))


def judge_outputs(outs: list[Any], refs: list[torch.Tensor], dtype: str, limits: dict[str, float],
                  device: str) -> list[str]:
    """What is broken in the candidate's bench-shape outputs against the reference (empty: they match)."""
    if len(outs) != len(refs):
        return [f"returned {len(outs)} output(s), expected {len(refs)}"]
    broken: list[str] = []
    for i, (out, ref) in enumerate(zip(outs, refs)):
        if not isinstance(out, torch.Tensor) or out.shape != ref.shape:
            shape = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            return [f"output {i} is {shape}, expected shape {list(ref.shape)}"]
        try:
            _, worst, problems = m.assess(out.to(device), ref.to(device), dtype, limits)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
            _, worst, problems = m.assess(out, ref, dtype, limits)
        if problems:
            at = f"; worst element {list(worst.index)}: got {worst.got:.6g}, expected {worst.expected:.6g}" if worst else ""
            broken.append("; ".join(problems) + at)
    return broken


def main(job_dir: Path, ready_at: float | None = None) -> int:
    """One job. `ready_at`: when this process had started (Python, torch; a server's loop); the seconds the job
    waited for that (its `sent_at`, the parent's clock: the monotonic clock is the system's) go to the results as
    START_KEY, so the benchmark's breakdown shows what a kept or reserved server saves."""
    ready_at = time.monotonic() if ready_at is None else ready_at
    job = json.loads((job_dir / "bench-reference-job.json").read_text())
    sent_at = job.get("sent_at")
    start_s = max(0.0, ready_at - sent_at) if isinstance(sent_at, (int, float)) else 0.0
    # Untimed GPU work, never beside a timing: the GPU's lock shared, taken here after Python and torch have loaded (2-3
    # s a climb that other climbs' timings no longer wait for), around everything that touches the GPU.
    with gpu_lock.held_for(job.get("gpu_lock"), shared=True) as held:
        results = judge(job, job_dir)
    results[WAIT_KEY] = round(float(held["wait_s"]), 3)
    results[START_KEY] = round(start_s, 3)
    atomic_write(job_dir / "bench-reference.json", json.dumps(results))
    return 0


KEEP_DEVICE_BYTES = 1 << 30
"""A server that holds more than this on the GPU after a job (a large problem's float64 Model) retires: the next
candidate's worker needs the memory more than the next reference needs the Model."""
KEEP_HOST_BYTES = 8 << 30
"""The same for its resident host memory."""


def serve(answers: int) -> int:
    """`--serve FD` (rungs/ladder/reference_server.py): judge the job in each folder named by a line on stdin, its
    output in that folder's log, and answer each on FD with "STATUS stays" or "STATUS retires". Ends at the end of
    stdin, or after the job that retires it: one that failed (what it left behind is not to be trusted) or left
    more than KEEP_DEVICE_BYTES on the GPU or KEEP_HOST_BYTES resident, or whose CUDA context is broken."""
    import traceback

    reply = os.fdopen(answers, "w", buffering=1)
    ready_at = time.monotonic()  # Python and torch loaded: a job sent before this waited for them
    for line in sys.stdin:
        job_dir = Path(line.strip())
        sys.stdout.flush()
        sys.stderr.flush()
        log = os.open(job_dir / "bench-reference.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(job_dir)
        try:
            status = main(job_dir, ready_at)
        except BaseException:  # noqa: BLE001 - a failed job is answered, as the one-job process exited non-zero
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        gc.collect()
        on_device, healthy = 0, True
        if torch.cuda.is_initialized():
            try:  # a CUDA error a job caught and went on from stays with the context: every later job would fail
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                on_device = torch.cuda.memory_reserved()
            except Exception:  # noqa: BLE001 - any error here retires the server
                healthy = False
        stays = status == 0 and healthy and on_device <= KEEP_DEVICE_BYTES and rss_bytes({os.getpid()}) <= KEEP_HOST_BYTES
        reply.write(f"{status} {'stays' if stays else 'retires'}\n")
        if not stays:
            return status
    return 0


WAIT_KEY = "_gpu_wait_s"
"""The seconds this process waited for the GPU's lock, beside the per-entry results (the benchmark's breakdown)."""
START_KEY = "_start_s"
"""The seconds the job waited for this process to start (Python, torch): 0.0 for a server started or kept ahead."""


def judge(job: dict[str, Any], job_dir: Path) -> dict[str, Any]:
    """Each bench entry's verdict on the first timed call's outputs and the picked calls' samples, by entry id."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(max(1, min(16, torch.get_num_threads())))
    plan: list[int] = []
    for shape in job["small_shapes"][:4]:  # the smallest test shapes: the first whose output has rows to cut
        small = load_function(job["inputs"])(dict(shape), torch_dtype(job["small_dtype"]), 0, "normal")
        plan = split_plan(load_function(job["reference"]), list(small))
        if plan:
            break
    cache = Path(job["cache"]) if job.get("cache") else None
    results: dict[str, Any] = {}
    for entry in job["entries"]:
        t0 = time.monotonic()
        file = job["outputs"].get(entry["id"])
        if not file or not OUTPUT_NAME.fullmatch(file) or not (job_dir / file).is_file():
            results[entry["id"]] = {"broken": ["the first timed call's outputs were not saved"], "seconds": 0.0}
            continue
        reference = load_function(job["reference"])
        want = torch_dtype(entry["dtype"])
        limits = job["limits"][entry["dtype"]]
        base = bench_inputs(entry, cache, device)  # read once: the first call's meta or sample, and the checked calls
        meta = output_meta(reference, base, plan, device)
        whole_bytes = sum(e.nbytes for e in _whole_contract(meta, want)) if meta is not None else 0
        if whole_bytes > int(job.get("first_full_bytes", 1 << 30)):
            # The worker saved a sample of the first call's rows (rungs/worker/timed_calls.TimedCalls): judged like a
            # checked call's, on the inputs as made, with the reference at those rows only. Nothing of this size goes
            # through a file.
            problem = check_sample(entry, file, "the first timed call", job_dir, reference, plan, device, limits, 0,
                                   base, base, meta)
            broken, how = ([problem] if problem else []), "float64 at the sampled rows"
        else:
            refs, how = reference_for(entry, job["reference"], plan, device, cache, base)  # base: drawn once
            meta = meta_of(refs)
            try:
                outs = outputs.load(job_dir / file, _whole_contract(meta, want))
            except outputs.OutputRefused as exc:
                results[entry["id"]] = {"broken": [f"the first timed call: {exc}"], "seconds": 0.0}
                continue
            broken = judge_outputs(outs, refs, entry["dtype"], limits, device)
            del outs, refs
        first_s = time.monotonic() - t0
        judged: list[int] = []
        picks = job.get("picks", {}).get(entry["id"])
        if not broken and picks is not None:
            broken, judged = verify_picks(entry, picks, job_dir, reference, plan, device, limits,
                                          int(job.get("fresh_seed", 0)), cache, random.SystemRandom(), meta, base)
        results[entry["id"]] = {"broken": broken, "reference": how, "split": plan, "picks_judged": judged,
                                "first_s": round(first_s, 3), "seconds": round(time.monotonic() - t0, 3)}
        del base  # a device draw of GBs: gone before the next entry's
        if device == "cuda":
            torch.cuda.empty_cache()
    return results


if __name__ == "__main__":
    from rungs.core.exit import exit_now

    exit_now(serve(int(sys.argv[2])) if sys.argv[1] == "--serve" else main(Path(sys.argv[1])))
