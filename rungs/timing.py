"""Timing a callable on the GPU, in the process that owns it: the candidate's worker (`bench` phase) or the
trusted baseline process (rungs/ladder/baseline.py). Nothing here judges; the parent turns times into metrics.

One timed sample (single mode), all on one stream:

    flush L2 (read a buffer >= 2x the L2 size) -> event a -> fn(*inputs[i % sets]) -> event b
    -> torch.cuda.synchronize() (device-wide) -> event c

The flush keeps the device busy while the host launches `fn`, so Python launch overhead stays out of the
number (a 256 MiB flush takes ~60 us on an H200) and the inputs are not served from L2; the input sets rotate
as well. runtime = b - a. The device-wide synchronize puts the end of the timed region where the device is idle:
c - b is the host's wake-up after that, which is compared with the same gap measured with nothing launched.
When it is longer, the candidate left work running on other streams, and runtime becomes c - a minus that
calibrated gap, so side-stream work counts.

Kernels shorter than `graph_under_us` are timed as replays of a CUDA graph of K calls over rotating input sets
(covering several times the L2), time per replay over K: launch gaps shrink to the graph's, which a single
event pair cannot resolve.

Samples are taken until the median is stable (its relative standard error, estimated from the interquartile
range, is under `rel_se`, after `min_reps`), or `cap_s` or `max_reps` is reached. Medians and interquartile
ranges are reported, never means.

Kept free of the harness's own imports (pydantic and friends), like rungs/worker/loop.py.
"""
from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from rungs.core.imports import import_file
from rungs.worker.job import Job

# Normal-distribution constants for the median's standard error from the IQR: sigma ~ IQR / 1.349, and the
# median's standard error is sqrt(pi/2) ~ 1.2533 times the mean's.
IQR_TO_SIGMA = 1.0 / 1.349
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)


@dataclass
class TimingConfig:
    """How hard to time. The job's `timing` dict may override any field."""

    warmup_ms: float = 200.0
    """Device time spent in warm-up calls (after the first call, which may JIT-compile the shape)."""
    warmup_max_calls: int = 500
    min_reps: int = 20
    max_reps: int = 2000
    rel_se: float = 0.005
    """Stop once the median's relative standard error is at most this."""
    cap_s: float = 3.0
    """Wall-time cap on the timed samples of one shape (warm-up not counted)."""
    graph_under_us: float = 20.0
    """Kernels whose single-call time is under this are timed through CUDA-graph replays."""
    graph_replay_us: float = 2000.0
    """Aim for a replay about this long: K = graph_replay_us / single-call time."""
    graph_max_calls: int = 1000
    sets: int = 3
    """Input sets rotated among in single mode (the flush already empties L2; rotation moves the addresses)."""
    graph_l2_multiple: float = 4.0
    """In graph mode, enough input sets to cover this many L2 sizes, so no call finds its inputs cached."""
    sets_max_bytes: int = 8 << 30
    """Memory the extra input sets may take (also at most a quarter of the free device memory)."""
    flush_min_bytes: int = 256 << 20
    calibrate_reps: int = 10
    side_stream_min_us: float = 5.0
    """Work left on other streams counts when the end gap exceeds the calibrated one by this much..."""
    side_stream_min_frac: float = 0.03
    """...and by this fraction of the stream-ordered runtime."""
    keep_samples: int = 2000

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "TimingConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- statistics (pure) ---------------------------------------------------------------------------------
def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    if not sorted_xs:
        return math.nan
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def rel_se_of_median(samples: Sequence[float]) -> float:
    """The median's standard error over the median, estimated robustly from the IQR (inf under 4 samples)."""
    if len(samples) < 4:
        return math.inf
    xs = sorted(samples)
    med = quantile(xs, 0.5)
    if med <= 0:
        return math.inf
    sigma = (quantile(xs, 0.75) - quantile(xs, 0.25)) * IQR_TO_SIGMA
    return MEDIAN_SE_FACTOR * sigma / math.sqrt(len(xs)) / med


def summarize(samples: Sequence[float]) -> dict[str, float]:
    xs = sorted(samples)
    q25, med, q75 = quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75)
    return {"runtime_us": med, "iqr_us": q75 - q25, "q25_us": q25, "q75_us": q75, "min_us": xs[0] if xs else math.nan,
            "max_us": xs[-1] if xs else math.nan, "mean_us": sum(xs) / len(xs) if xs else math.nan, "reps": len(xs),
            "rel_se": rel_se_of_median(xs)}


def collect(sample: Callable[[], float], cfg: TimingConfig,
            clock: Callable[[], float] = time.monotonic) -> tuple[list[float], str]:
    """Take samples until the median is stable, the time cap or the repetition cap; returns (samples, why)."""
    samples: list[float] = []
    t0 = clock()
    while True:
        samples.append(sample())
        n = len(samples)
        if n >= cfg.min_reps and rel_se_of_median(samples) <= cfg.rel_se:
            return samples, "stable"
        if n >= cfg.max_reps:
            return samples, "max_reps"
        if n >= 3 and clock() - t0 >= cfg.cap_s:
            return samples, "time_cap"


# ---- devices ---------------------------------------------------------------------------------------------
class CudaDevice:
    """Events, a device-wide sync, an L2 flush and graph capture on the current CUDA device."""

    def __init__(self, cfg: TimingConfig) -> None:
        import torch

        self.torch = torch
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.name: str = props.name
        self.l2_bytes: int = int(getattr(props, "L2_cache_size", 0) or (64 << 20))
        self.stream = torch.cuda.current_stream()
        flush_bytes = max(2 * self.l2_bytes, cfg.flush_min_bytes)
        self._flush_buf = torch.ones(flush_bytes // 4, dtype=torch.int32, device="cuda")
        self._events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        self._flips = 0
        self.persisting_l2 = no_persisting_l2()

    def unpersist(self) -> None:
        """The persisting-L2 carve-out back to 0 (once before the warm-up: after the candidate's import and first
        call): with none, an access-policy window's lines are ordinary lines that the flush evicts."""
        self.persisting_l2 = no_persisting_l2()

    def flush(self) -> None:
        # A read of twice the L2 evicts every line (writing back the last call's dirty outputs before the timed
        # region) and leaves L2 holding clean lines, as Nsight Compute's cache control does. A write-based flush
        # left dirty lines whose write-back landed inside the next timed call (+6.6% against ncu, seen on H200).
        # Lines a candidate holds persisting (an access-policy window) survive these reads. Resetting them first
        # (cuCtxResetPersistingL2Cache) was tried: it slowed an honest softmax 8192^2 from 275 to 384 us, while a
        # window gained a 16 MiB read about 5% (benchmarks/l2_persist_probe.py); the screen refuses the routes.
        self._flush_buf.sum(dtype=self.torch.int64)

    def spin(self) -> None:
        """Keep the device busy while the host launches the timed call: the start event is stream-ordered, so
        a host slowed by Python or a busy CPU would otherwise leave the device idle inside the timed region."""
        self.torch.cuda._sleep(SPIN_CYCLES)

    def mark(self, slot: int) -> Any:
        event = self._events[slot]
        event.record(self.stream)
        return event

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def wait(self, mark: Any) -> None:
        mark.synchronize()

    def us(self, a: Any, b: Any) -> float:
        return a.elapsed_time(b) * 1000.0

    def call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        with self.torch.cuda.stream(self.stream):  # a candidate that switches streams and leaves them switched
            return fn(*args)

    def capture(self, body: Callable[[], None]) -> Callable[[], None]:
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(self.stream)
        with torch.cuda.stream(side):  # lazy initialisation (cuBLAS workspaces...) outside the capture
            body()
        self.stream.wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        torch.cuda.synchronize()

        def replay() -> None:
            with torch.cuda.stream(self.stream):
                graph.replay()

        replay.graph = graph  # type: ignore[attr-defined]  # keeps it alive as long as the callable
        return replay

    def free_bytes(self) -> int:
        return int(self.torch.cuda.mem_get_info()[0])

    def release(self) -> None:
        self.torch.cuda.empty_cache()


CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def no_persisting_l2() -> str:
    """Set the current context's persisting-L2 limit to 0 through the driver (cuCtxSetLimit); what happened, in
    words (the verdict's timing note). The driver is already loaded by torch: no new library is brought in."""
    import ctypes

    try:
        rc = ctypes.CDLL("libcuda.so.1").cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
    except OSError as exc:
        return f"not set ({exc})"
    return "0" if rc == 0 else f"not set (CUresult {rc})"


class HostDevice:
    """The same interface with the host clock: for CPU tests of the timing logic, not for real numbers."""

    name = "cpu"
    l2_bytes = 1 << 20
    persisting_l2 = None

    def unpersist(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def spin(self) -> None:
        pass

    def mark(self, slot: int) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        pass

    def wait(self, mark: Any) -> None:
        pass

    def us(self, a: float, b: float) -> float:
        return (b - a) * 1e6

    def call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        return fn(*args)

    def capture(self, body: Callable[[], None]) -> Callable[[], None]:
        body()  # as a capture does: what the body returns then is what every replay writes (the checks hold it)
        return body

    def free_bytes(self) -> int:
        return 64 << 30

    def release(self) -> None:
        pass


def device_for(device: str, cfg: TimingConfig) -> CudaDevice | HostDevice:
    return CudaDevice(cfg) if device == "cuda" else HostDevice()


# ---- inputs ----------------------------------------------------------------------------------------------
def load_function(ref: str) -> Callable[..., Any]:
    """`/abs/path/file.py:function` -> the function (the task's own, trusted files)."""
    path, _, name = ref.rpartition(":")
    return getattr(import_file(path), name)


def torch_dtype(name: str) -> Any:
    import torch

    return torch.float32 if name == "tf32" else getattr(torch, name)


def _make_on_cpu(entry: dict[str, Any]) -> list[Any]:
    make_inputs = load_function(entry["inputs"])
    return list(make_inputs(dict(entry["shape"]), torch_dtype(entry["dtype"]), entry["seed"], entry["dist"]))


def hollow_spec(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """What a bench entry's inputs are, without their values: the input maker runs on the meta device (no values,
    no time) in the harness's own process, so the worker needs no access to the task's folder. Raises TypeError for
    an input that is neither a tensor nor a plain value."""
    import torch

    with torch.device("meta"):
        made = _make_on_cpu(entry)
    spec: list[dict[str, Any]] = []
    for v in made:
        if isinstance(v, torch.Tensor):
            spec.append({"shape": list(v.shape), "stride": list(v.stride()), "dtype": str(v.dtype).removeprefix("torch.")})
        elif isinstance(v, (bool, int, float, str, type(None))):
            spec.append({"value": v})
        else:
            raise TypeError(f"input of type {type(v).__name__}")
    return spec


def hollow_bench_inputs(spec: list[dict[str, Any]], device: str) -> list[Any]:
    """Inputs as `hollow_spec` describes them, holding nothing in particular: uninitialized memory (on a CPU, pages
    nobody touches cost nothing). For a compile capture, which compiles a launch and never runs it."""
    import torch

    return [torch.empty_strided(s["shape"], s["stride"], dtype=torch_dtype(s["dtype"]), device=device)
            if "shape" in s else s["value"] for s in spec]


def _cpu_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 16))


def make_bench_inputs(entry: dict[str, Any], device: str, keep: bool = False) -> tuple[list[Any], float]:
    """The bench entry's inputs, made here (large inputs would be slow to pass through files), on `device`.
    Returns (inputs, seconds). Uses what prefetch_inputs made, else makes them now on all CPU cores (the
    sandbox starts workers with one). `keep`: the host copy stays for the next phase (autotuning, then bench)."""
    import torch

    t0 = time.perf_counter()
    if _prefetch["thread"] is not None:
        _prefetch["thread"].join()
    made = _prefetch["made"].pop(_key(entry), None)
    if isinstance(made, BaseException):
        raise made
    if made is None:
        threads = torch.get_num_threads()
        torch.set_num_threads(_cpu_threads())
        try:
            made = _make_on_cpu(entry)
        finally:
            torch.set_num_threads(threads)
    if keep:
        _prefetch["made"][_key(entry)] = made
    inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in made]
    if device == "cuda":
        torch.cuda.synchronize()
    return inputs, time.perf_counter() - t0


def alt_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """The bench entry of the second, independent draw whose elements fresh_values mixes with the first's."""
    return {**entry, "seed": entry["seed"] + ALT_SEED_OFFSET}


_prefetch: dict[str, Any] = {"thread": None, "made": {}, "seconds": 0.0}


def _key(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True)


def prefetch_inputs(job: Job) -> None:
    """Start making the bench inputs on the CPU in a background thread, so that it overlaps the compile and run
    phases: the input makers draw from a seeded CPU generator, one core, seconds for a GiB."""
    import torch

    entries = [e for entry in job.bench for e in (entry, alt_entry(entry))]
    if not entries:
        return
    torch.set_num_threads(_cpu_threads())

    def work() -> None:
        t0 = time.perf_counter()
        for entry in entries:
            try:
                _prefetch["made"][_key(entry)] = _make_on_cpu(entry)
            except BaseException as exc:  # noqa: BLE001 - raised again where the bench phase asks for them
                _prefetch["made"][_key(entry)] = exc
        _prefetch["seconds"] = time.perf_counter() - t0

    for entry in entries:  # imports stay in the main thread
        try:
            load_function(entry["inputs"])
        except Exception:  # noqa: BLE001 - the bench phase raises it
            return
    _prefetch["thread"] = threading.Thread(target=work, name="bench-inputs", daemon=True)
    _prefetch["thread"].start()


def clone_input(value: Any) -> Any:
    """A copy at a new address with the same sizes, strides and storage offset (views stay views)."""
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    if value.is_contiguous() and value.storage_offset() == 0:
        return value.clone()
    storage = value.untyped_storage()
    copy = torch.UntypedStorage(storage.nbytes(), device=value.device)
    copy.copy_(storage)
    out = torch.empty(0, dtype=value.dtype, device=value.device)
    out.set_(copy, value.storage_offset(), value.size(), value.stride())
    return out


def set_bytes(inputs: Sequence[Any]) -> int:
    import torch

    return sum(v.untyped_storage().nbytes() for v in inputs if isinstance(v, torch.Tensor))


def input_sets(inputs: list[Any], wanted: int, dev: CudaDevice | HostDevice, cfg: TimingConfig) -> list[list[Any]]:
    """Clones of `inputs`, as many as wanted and the memory budget allows (at least one). `inputs` itself is never
    among them: fresh values are written into the sets, and `inputs` (the first call's, the base draw) stays as made."""
    size = max(set_bytes(inputs), 1)
    budget = min(cfg.sets_max_bytes, dev.free_bytes() // 4)
    n = max(1, min(wanted, budget // size))
    return [[clone_input(v) for v in inputs] for _ in range(n)]


# ---- fresh values for every call --------------------------------------------------------------------------------
ALT_SEED_OFFSET = 7_777_777
"""The second draw of a bench entry's inputs is the input maker's at seed + this (an independent draw of the same
distribution, with the same structure: zeros, triangles and value ranges the maker puts there stay)."""
CALL_SEED_STRIDE = 1_000_003


def call_seed(fresh_seed: int, call: int, slot: int = 0) -> int:
    """The seed of the values call `call` sees in input slot `slot` (a graph replay's sub-call; 0 when timed call by
    call). The parent (rungs/ladder/bench_reference.py) rebuilds a checked call's inputs from it."""
    return (fresh_seed + CALL_SEED_STRIDE * call + slot) % (1 << 62)


def input_mask(shape: Sequence[int], device: Any, seed: int, index: int) -> Any:
    """Which elements of input `index` a call with values `seed` takes from the first draw (True) or the second: the
    one rule the worker (fresh_values) and the parent (rungs/ladder/bench_reference.py) share, drawn on the same device."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed((seed * 131 + index) % (1 << 62))
    bits = torch.empty(tuple(shape), dtype=torch.uint8, device=device).random_(0, 2, generator=g)
    return bits.view(torch.bool)


def mixable(base: Any, alt: Any) -> bool:
    import torch

    return (isinstance(base, torch.Tensor) and isinstance(alt, torch.Tensor) and base.numel() > 0
            and base.shape == alt.shape and base.dtype == alt.dtype and base.device == alt.device)


def fresh_values(base: Sequence[Any], alt: Sequence[Any], seed: int, out: Sequence[Any] | None = None) -> list[Any]:
    """One call's inputs: every element of every tensor input taken from `base` or `alt` (two independent draws of the
    task's input maker) by a coin drawn from `seed`, written into `out` (the call's input buffers) or new tensors.
    Each element keeps its distribution and place; the tensor as a whole is one of 2^numel, so no result cache keyed
    by an input's object, address, shape or any sample of its values can hit again. Inputs that are not tensors,
    and tensors the two draws do not share the shape of, stay as in `base`."""
    import torch

    made = []
    for i, (b, a) in enumerate(zip(base, alt)):
        dest = out[i] if out is not None else None
        if not mixable(b, a):
            if dest is not None and isinstance(b, torch.Tensor) and dest is not b:
                dest.copy_(b)
            made.append(dest if dest is not None else b)
            continue
        mask = input_mask(b.shape, b.device, seed, i)
        if dest is None:
            made.append(torch.where(mask, b, a))
        else:
            torch.where(mask, b, a, out=dest)
            made.append(dest)
    return made


# ---- measuring -------------------------------------------------------------------------------------------
SPIN_CYCLES = 600_000
"""About 300 us at an H200's 1.98 GHz: longer than a slow host takes to launch one call. The host waits for it in
every sample's synchronize: a sample's host wall time is flush + spin + the call on the device, whatever the
entry's own host cost (which the spin hides, by design). The host time per call is therefore measured around the
call itself (`host_us`); the old wall-clock check compared whole samples against an idle sample without the spin,
and read this spin as 300 us of hidden work."""


def calibrate_gap(dev: CudaDevice | HostDevice, reps: int) -> float:
    """The end-of-region gap with nothing launched: how long the host takes to see an idle device and record."""
    gaps = []
    for _ in range(reps):
        dev.flush()
        a = dev.mark(0)
        dev.sync()
        c = dev.mark(2)
        dev.wait(c)
        gaps.append(dev.us(a, c))
    return quantile(sorted(gaps), 0.5)


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


class NoChecks:
    """What `measure` does around calls when nobody checks them (the trusted baseline process, tests)."""

    def call(self, dev: Any, fn: Callable[..., Any], args: Sequence[Any], i: int) -> Any:
        return dev.call(fn, args)

    def after(self, outputs: Any, args: Sequence[Any], i: int) -> None:
        pass

    def graph_outputs(self, outputs: list[Any], sets: list[list[Any]]) -> None:
        pass

    def before_replay(self) -> None:
        pass

    def after_replay(self, i: int) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class Fresh:
    """Fresh input values for every call after the first (fresh_values): the second draw to mix with the first, and
    the parent's seed, from which the parent rebuilds any call's inputs (call_seed)."""

    alt: list[Any]
    seed: int

    def write(self, base: Sequence[Any], dest: Sequence[Any], call: int, slot: int = 0) -> None:
        fresh_values(base, self.alt, call_seed(self.seed, call, slot), out=dest)


def measure(fn: Callable[..., Any], inputs: list[Any], dev: CudaDevice | HostDevice, cfg: TimingConfig,
            clock: Callable[[], float] = time.monotonic, checks: Any = None,
            fresh: Fresh | None = None) -> dict[str, Any]:
    """Time fn(*inputs) as the module docstring says. Returns the summary, the samples and how they were taken.

    The first call sees `inputs` as made; with `fresh`, every later call (warm-up, timed, every call of a graph
    replay) sees values of its own, written into its input buffers before its sample starts (outside the timed
    region, before the L2 flush), so no two calls see the same values and no result cache can hit.
    `checks` (the worker's rungs.worker.guards.TimedCalls) sees every call: `call` makes it, `after` takes its outputs once
    the sample has ended (outside the timed region): it decides then, and only then, whether the call is one the
    parent will check, samples its outputs either way, and poisons them before they return to the allocator, the
    same for every call, so a call cannot know whether it is checked. Host time per call (the entry's own Python and
    launch, by the host clock) is reported beside the events'."""
    checks = checks or NoChecks()
    t0 = time.perf_counter()
    out = checks.call(dev, fn, inputs, 0)  # the first call may compile this shape's specialization
    dev.sync()
    first_call_s = time.perf_counter() - t0
    checks.after(out, inputs, 0)
    del out
    gap0 = calibrate_gap(dev, cfg.calibrate_reps)
    note: list[str] = []
    dev.unpersist()

    sets = input_sets(inputs, cfg.sets, dev, cfg)

    calls = [0]  # calls made so far: the index the next one has
    host_us: list[float] = []
    refresh_s = [0.0]

    def refresh(args: Sequence[Any], k: int, slot: int = 0) -> None:
        if fresh is not None:
            r0 = time.perf_counter()
            fresh.write(inputs, args, k, slot)
            refresh_s[0] += time.perf_counter() - r0

    def single(i: int) -> tuple[float, float, float]:
        args = sets[i % len(sets)]
        k = calls[0] = calls[0] + 1
        refresh(args, k)
        dev.flush()
        dev.spin()
        a = dev.mark(0)
        h0 = time.perf_counter()
        out = checks.call(dev, fn, args, k)
        host_us.append((time.perf_counter() - h0) * 1e6)
        b = dev.mark(1)
        dev.sync()
        c = dev.mark(2)
        dev.wait(c)
        checks.after(out, args, k)
        return dev.us(a, b), dev.us(b, c), dev.us(a, c)

    t0 = time.perf_counter()
    warm: list[float] = []
    while len(warm) < cfg.warmup_max_calls and (len(warm) < 2 or sum(warm) < cfg.warmup_ms * 1000):
        stream_us, _, idle_us = single(len(warm))
        warm.append(max(stream_us, idle_us - gap0))  # work on other streams counts here too
        if time.perf_counter() - t0 > cfg.cap_s:
            break
    single_us = quantile(sorted(warm[len(warm) // 2:]), 0.5)
    warmup_s = time.perf_counter() - t0

    mode, calls_per = "single", 1
    sample_fn: Callable[[int], tuple[float, float, float]] = single
    if single_us < cfg.graph_under_us:
        calls_per = int(min(cfg.graph_max_calls, max(2, math.ceil(cfg.graph_replay_us / max(single_us, 0.1)))))
        wanted = max(cfg.sets, math.ceil(cfg.graph_l2_multiple * dev.l2_bytes / max(set_bytes(inputs), 1)))
        graph_sets = input_sets(inputs, calls_per if fresh is not None else min(wanted, calls_per), dev, cfg)
        if fresh is not None:  # every call of a replay on buffers of its own, so each sees values of its own
            calls_per = max(1, min(calls_per, len(graph_sets)))

        captured: list[Any] = []

        def body() -> None:
            captured.clear()
            for k in range(calls_per):
                captured.append(fn(*graph_sets[k % len(graph_sets)]))

        try:
            replay = dev.capture(body)
        except Exception as exc:  # noqa: BLE001 - host syncs, CPU tensors... in the candidate: time it singly
            note.append(f"CUDA-graph capture failed ({type(exc).__name__}: {str(exc)[:200]}); timed call by call")
            dev.sync()
            calls_per = 1
        else:
            sets = graph_sets
            mode = "graph"
            checks.graph_outputs(captured, [graph_sets[k % len(graph_sets)] for k in range(calls_per)])

            def graph_sample(i: int) -> tuple[float, float, float]:
                # A replay runs no Python of the candidate's; every replay starts on poisoned outputs and on fresh
                # input values in every call's buffers (before the flush, untimed), and which replay is checked is
                # decided after it ended.
                k = calls[0] = calls[0] + 1
                checks.before_replay()
                if fresh is not None:
                    for slot in range(calls_per):  # one slot per call of the replay (calls_per <= sets)
                        refresh(graph_sets[slot], k, slot)
                dev.flush()
                dev.spin()
                a = dev.mark(0)
                replay()
                b = dev.mark(1)
                dev.sync()
                c = dev.mark(2)
                dev.wait(c)
                checks.after_replay(k)
                return dev.us(a, b) / calls_per, dev.us(b, c), dev.us(a, c)

            for i in range(2):
                graph_sample(i)
            sample_fn = graph_sample

    raw: list[tuple[float, float, float]] = []

    def one() -> float:
        raw.append(sample_fn(len(raw)))
        return raw[-1][0]

    t0 = time.perf_counter()
    samples, stop = collect(one, cfg, clock)
    timed_s = time.perf_counter() - t0
    checks.finish()

    # Work left on other streams shows as a longer wait for the idle device than with nothing launched.
    stream_us = quantile(sorted(samples), 0.5)
    tail_us = quantile(sorted(r[1] for r in raw), 0.5) - gap0
    side_stream = mode == "single" and tail_us > max(cfg.side_stream_min_us, cfg.side_stream_min_frac * stream_us)
    if side_stream:
        samples = [max(r[2] - gap0, r[0]) for r in raw]
        note.append(f"work ran past the end event on another stream (~{tail_us:.1f} us): timed to device idle")
    result = summarize(samples)
    timed_host = sorted(host_us[len(warm):]) or sorted(host_us)
    result.update(mode=mode, calls_per_replay=calls_per, input_sets=len(sets), calls=calls[0] + 1,
                  persisting_l2=dev.persisting_l2,
                  fresh_inputs=fresh is not None, refresh_s=round(refresh_s[0], 4),
                  host_us=quantile(timed_host, 0.5) if timed_host else math.nan, checked=getattr(checks, "report", None), stop=stop, single_us=single_us,
                  side_stream=side_stream, end_gap_us=tail_us + gap0, idle_gap_us=gap0, first_call_s=first_call_s,
                  warmup_calls=len(warm), warmup_s=warmup_s, timed_s=timed_s, note="; ".join(note),
                  samples_us=[round(s, 3) for s in samples[: cfg.keep_samples]])
    dev.release()
    return result


def bench_entry(fn: Callable[..., Any], job: Job, job_dir: Path) -> list[dict[str, Any]]:
    """The worker's `bench` phase: time the candidate on each of job.bench (rungs/ladder/benchmark.py makes them)."""
    import torch
    import torch.utils.deterministic

    from rungs.worker import guards

    # One state for every call of the bench phase: the first call, warm-up, timed calls, the checked ones among
    # them and the recheck after timing (guards.after_bench). It is not the run phase's: there torch fills fresh
    # memory with NaN (deterministic mode), a fill kernel per output that would be timed inside the call (a full
    # extra write of a 1 GiB softmax output, +50%). Here fresh output memory is poisoned through the allocator
    # instead: every call's outputs are filled with NaN after its sample ends (guards.TimedCalls.after), so the
    # next call's torch.empty most likely gets NaN memory, the same for checked and unchecked calls.
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = False
    cfg = TimingConfig.from_dict(job.timing)
    dev = device_for(job.device, cfg)
    results = []
    for entry in job.bench:
        inputs, inputs_s = make_bench_inputs(entry, job.device)
        alt, alt_s = make_bench_inputs(alt_entry(entry), job.device)
        checks = guards.TimedCalls(job, entry["id"], job_dir)
        with torch.no_grad():
            result = measure(fn, inputs, dev, cfg, checks=checks, fresh=Fresh(alt, job.fresh_seed))
        inputs_s += alt_s
        del inputs, alt
        dev.release()
        results.append({"id": entry["id"], "shape": entry["shape"], "dtype": entry["dtype"], "gpu": dev.name,
                        "inputs_s": inputs_s, "inputs_background_s": _prefetch["seconds"], **result})
    return results


class Witnessed(NoChecks):
    """Calls as the bench phase makes them (fresh inputs, outputs poisoned after each), with Nsight Compute's range
    (cudaProfilerStart/Stop: ncu runs with --profile-from-start off) around call `call` alone. Nothing before that
    call's launch tells it apart; the range closes once it returned, so what it launched is what ncu measures."""

    def __init__(self, call: int) -> None:
        self.call_index = call

    def call(self, dev: Any, fn: Callable[..., Any], args: Sequence[Any], i: int) -> Any:
        if i != self.call_index:
            return dev.call(fn, args)
        import torch

        torch.cuda.profiler.start()
        try:
            return dev.call(fn, args)
        finally:
            torch.cuda.profiler.stop()

    def after(self, outputs: Any, args: Sequence[Any], i: int) -> None:
        from rungs.worker import guards

        guards.poison(guards.as_outputs(outputs), args)


WITNESS_CALLS = 12
"""Calls the witness phase makes after its two warm-up calls; the profiled one is drawn among them by the parent."""


def witness_entry(fn: Callable[..., Any], job: Job) -> dict[str, Any]:
    """The worker's `witness` phase: the bench phase's loop on one bench entry, in its state, with the parent's
    drawn call profiled (Witnessed)."""
    import torch
    import torch.utils.deterministic

    torch.use_deterministic_algorithms(False)  # the bench phase's state (bench_entry)
    torch.utils.deterministic.fill_uninitialized_memory = False
    spec = job.witness or {}
    entry = next(e for e in job.bench if e["id"] == spec.get("bench_id"))
    call = int(spec["call"])
    cfg = TimingConfig(**{**TimingConfig.from_dict(job.timing).as_dict(), "warmup_ms": 0.0, "graph_under_us": 0.0,
                          "min_reps": WITNESS_CALLS, "max_reps": WITNESS_CALLS, "cap_s": 60.0, "keep_samples": 0})
    dev = device_for(job.device, cfg)
    inputs, _ = make_bench_inputs(entry, job.device)
    alt, _ = make_bench_inputs(alt_entry(entry), job.device)
    with torch.no_grad():
        result = measure(fn, inputs, dev, cfg, checks=Witnessed(call), fresh=Fresh(alt, job.fresh_seed))
    return {"ok": True, "bench_id": entry["id"], "calls": result["calls"], "runtime_us": result["runtime_us"]}


AUTOTUNE_WARMUP_MS = 50.0
"""Warm-up per point and shape while autotuning: the winner is timed again in full by the bench phase."""


def tune_space(entry: Callable[..., Any], space: Any, job: Job, job_dir: Path) -> dict[str, Any]:
    """The worker's autotune phase: time every point of the declared space (rungs/worker/autotune.py) on every bench shape
    with `measure` and its checked calls, within job.autotune_s seconds; the fastest over the sum of the shapes
    wins. Points the budget leaves untimed, and points that raised, cannot win; with none timed the default does."""
    import torch
    import torch.utils.deterministic

    from rungs.worker import autotune, guards

    torch.use_deterministic_algorithms(False)  # the bench phase's state (bench_entry)
    torch.utils.deterministic.fill_uninitialized_memory = False
    base = TimingConfig.from_dict(job.timing)
    shapes = max(len(job.bench), 1)
    share = max(job.autotune_s, 0.0) / (len(space) * shapes)
    cfg = TimingConfig(**{**base.as_dict(), "warmup_ms": min(base.warmup_ms, AUTOTUNE_WARMUP_MS),
                          "cap_s": max(0.05, min(base.cap_s, 0.5 * share)), "keep_samples": 0})
    dev = device_for(job.device, cfg)
    t0 = time.monotonic()
    inputs = {e["id"]: make_bench_inputs(e, job.device, keep=True)[0] for e in job.bench}
    rows: list[dict[str, Any]] = []
    for k, label in enumerate(space.labels):
        row: dict[str, Any] = {"config": k, "label": label, "status": "timed", "per_shape": {}}
        rows.append(row)
        if time.monotonic() - t0 > job.autotune_s:
            row["status"] = "over budget"
            continue
        with autotune.chosen(k):
            fn = autotune.bound(entry)
            for e in job.bench:
                checks = guards.TimedCalls(job, f"{e['id']}-cfg{k}", job_dir, save=False)
                try:
                    with torch.no_grad():
                        r = measure(fn, inputs[e["id"]], dev, cfg, checks=checks)
                except guards.GUARD_ERRORS:
                    raise
                except Exception as exc:  # noqa: BLE001 - this point fails (out of resources...): it cannot win
                    row.update(status="error", error=f"{type(exc).__name__}: {str(exc)[:300]}")
                    dev.sync()
                    break
                report = checks.report
                row["per_shape"][e["id"]] = {"runtime_us": r["runtime_us"], "iqr_us": r["iqr_us"], "reps": r["reps"],
                                             "mode": r["mode"], "no_launch": len(report["no_launch"])}
        if row["status"] == "timed":
            row["runtime_us"] = sum(v["runtime_us"] for v in row["per_shape"].values())
    del inputs
    dev.release()
    timed = [r for r in rows if r["status"] == "timed"]
    winner = min(timed, key=lambda r: r["runtime_us"])["config"] if timed else 0
    return {"configs": rows, "winner": winner, "kind": space.kind, "seconds": time.monotonic() - t0,
            "budget_s": job.autotune_s, "gpu": dev.name}
