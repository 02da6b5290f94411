"""Timing a callable on the GPU, in the process that owns it: the candidate's worker (its `bench` phase,
rungs/worker/bench.py) or the trusted baseline process (rungs/ladder/baseline.py). Nothing here judges; the
parent turns times into metrics.

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
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from rungs.timing.devices import CudaDevice, HostDevice
    from rungs.timing.fresh import Fresh

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
    idle_drift_max_us: float = 20.0
    """The most a single call's idle wait may lose for a host slower than at calibration (measured after the call:
    10.4 us seen on a busy H200 host). Capped because that second wait is the candidate's process's to lengthen too
    (a launch from a thread right then, past the screen's refusal of threads): past the cap, what it hid is counted,
    and below it the ncu witness still compares the kernels' own durations with the timed median."""
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


# ---- input sets ------------------------------------------------------------------------------------------
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


# ---- measuring -------------------------------------------------------------------------------------------
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

    def start_timing(self) -> None:
        pass

    def finish(self) -> None:
        pass


def measure(fn: Callable[..., Any], inputs: list[Any], dev: CudaDevice | HostDevice, cfg: TimingConfig,
            clock: Callable[[], float] = time.monotonic, checks: Any = None,
            fresh: Fresh | None = None) -> dict[str, Any]:
    """Time fn(*inputs) as the module docstring says. Returns the summary, the samples and how they were taken.

    The first call sees `inputs` as made; with `fresh`, every later call (warm-up, timed, every call of a graph
    replay) sees values of its own, written into its input buffers before its sample starts (outside the timed
    region, before the L2 flush), so no two calls see the same values and no result cache can hit.
    `checks` (the worker's rungs/worker/timed_calls.TimedCalls) sees every call: `call` makes it, `after` takes its
    outputs once the sample has ended (outside the timed region): it decides then, and only then, whether the call is
    one the parent will check, samples its outputs either way, and poisons them before they return to the allocator, the
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
        stream_us, tail_us, idle_us = dev.us(a, b), dev.us(b, c), dev.us(a, c)
        checks.after(out, args, k)  # the outputs as they are at c, before the untimed wait below
        # The wait for the idle device again, nothing launched: a host slowed by other work (the CPU busy with
        # compiles and other climbs) returns from every sync later than at calibration, and that is not work on
        # another stream (on the H200, an honest 10.9 us softmax was timed at 21.7 us "to device idle" so). The
        # tail and the idle time lose what this gap gained over gap0, at most idle_drift_max_us; the candidate's
        # work on other streams, if any, was all done before c (the sync waited for it).
        drift = min(max(0.0, calibrate_gap(dev, 1) - gap0), cfg.idle_drift_max_us)
        return stream_us, tail_us - drift, idle_us - drift

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
    checks.start_timing()
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
