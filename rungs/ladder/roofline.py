"""The roofline rung, and the device ceilings it stands on.

Ceilings are measured once per GPU model, in the trusted baseline process (rungs/ladder/baseline.py), and cached in
`~/.cache/kernel-harness/ceilings-<gpu>.json` (`KERNEL_HARNESS_CACHE` moves the folder): the copy bandwidth
(a large device-to-device copy, bytes read plus written) and the matrix rate per dtype (torch.matmul of large
random matrices, the better of 4096^3 and 8192^3). The plain fp32 FMA rate and the fp8 matrix rate come from
the datasheet. Where nothing was measured, datasheet figures stand in, labelled as such.

The floor time of a shape is max(FLOPs / rate, bytes / bandwidth), with FLOPs and bytes from the task's
formulas and the rate of `roofline.unit` at the shape's dtype. An iteration's roofline fraction is
floor / runtime (over all bench shapes: sum of floors over sum of runtimes). Over 100%, per shape:
- a runtime under the floor that even the datasheet's peak figures allow (fraction against those over
  IMPOSSIBLE_FRACTION) cannot be right: the rung fails and says so;
- a memory-bound shape over the measured device copy by more than COPY_NOISE_MARGIN fails as impossible, whatever
  the outside witness says: the task's bytes cannot move faster than a device copy moves the same bytes, so the
  timing or the bytes formula is wrong (a softmax skipping 1/8 of its rows when timed read 112.8%); where the
  trusted eager or torch.compile baseline moved the same bytes faster at that shape (traffic that only reads), the
  line is theirs (memory_line);
- a memory-bound shape over the copy but within the margin, or a compute-bound shape over the library's measured
  matmul (cuBLAS through torch.matmul: a hand-tuned kernel can beat it), passes only when the outside witness
  (Nsight Compute, in the profile rung) measured the same time, and the message says so.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.result import RungResult
from rungs.core.atomic import atomic_write
from rungs.core.fmt import pairs

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

IMPOSSIBLE_FRACTION = 1.05
COPY_NOISE_MARGIN = 0.05
"""How far over the measured device-copy bandwidth a memory-bound shape may read before it is impossible. The copy
ceiling is one timed measurement (a median; run-to-run spread of a 1 GiB copy on one H200 is about 1%), the
candidate's time another, taken at another moment: clocks and HBM temperature move each by a percent or two; and
traffic that mostly reads can run a few percent faster than a copy's one-to-one read/write mix (no bus turnaround).
5% covers those together; past it the bytes formula overstates the traffic or the time is wrong: a softmax skipping
1/8 of its rows when timed read 112.8%, past the margin by more than twice it."""

# Dense rates in TFLOP/s and bandwidth in GB/s, from NVIDIA's datasheets (SXM parts unless named).
_HOPPER_SXM_TFLOPS = {"bfloat16": 989.4, "float16": 989.4, "tf32": 494.7, "float32": 66.9, "fp32_fma": 66.9,
                      "float8_e4m3fn": 1978.9, "float8_e5m2": 1978.9}
DATASHEETS: list[tuple[str, str, float, dict[str, float]]] = [
    # (substring of the device name, label, bandwidth GB/s, rates)
    ("H200", "NVIDIA H200 SXM datasheet", 4800.0, _HOPPER_SXM_TFLOPS),
    ("H100 PCIe", "NVIDIA H100 PCIe datasheet", 2000.0,
     {"bfloat16": 756.0, "float16": 756.0, "tf32": 378.0, "float32": 51.2, "fp32_fma": 51.2,
      "float8_e4m3fn": 1513.0, "float8_e5m2": 1513.0}),
    ("H100", "NVIDIA H100 SXM datasheet", 3350.0, _HOPPER_SXM_TFLOPS),
]
MEASURED_DTYPES = ("bfloat16", "float16", "tf32", "float32")
MATMUL_SIZES = (4096, 8192)
COPY_BYTES = 1 << 30


# ---- ceilings --------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    return Path(os.environ.get("KERNEL_HARNESS_CACHE") or Path.home() / ".cache" / "kernel-harness")


def ceilings_path(gpu: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", gpu.strip()).strip("-") or "unknown"
    return cache_dir() / f"ceilings-{slug}.json"


def datasheet(gpu: str) -> dict[str, Any]:
    """Datasheet ceilings for `gpu`, every figure labelled; an unknown GPU gets the H100 SXM's, labelled a guess."""
    for key, label, bandwidth, rates in DATASHEETS:
        if key.lower() in gpu.lower():
            break
    else:
        key, label, bandwidth, rates = DATASHEETS[-1]
        label = f"unknown GPU {gpu!r}: {label} figures as a guess"
    source = f"datasheet fallback ({label}), not measured"
    return {"gpu": gpu, "bandwidth_gbps": bandwidth, "tflops": dict(rates),
            "source": {"bandwidth_gbps": source, **{k: source for k in rates}}, "datasheet": label}


PLAUSIBLE_FRACTION = 0.6
"""A measured ceiling under this fraction of a known GPU's datasheet figure was taken while the GPU was busy (seen on
the H200, 2026-12-03: a 1651 GB/s copy measured beside three other test processes, against 4250 alone and 4800 on
the datasheet), and would make honest kernels "faster than a device copy": it is not used, and measured again."""


def implausible(measured: dict[str, Any], gpu: str) -> list[str]:
    """The keys of a measurement ("bandwidth_gbps", or a dtype of "tflops") under PLAUSIBLE_FRACTION of the datasheet
    of a known GPU (an unknown GPU's datasheet is a guess: nothing is judged against it)."""
    sheet = datasheet(gpu)
    if sheet["datasheet"].startswith("unknown GPU"):
        return []
    low = []
    if float(measured.get("bandwidth_gbps") or sheet["bandwidth_gbps"]) < PLAUSIBLE_FRACTION * sheet["bandwidth_gbps"]:
        low.append("bandwidth_gbps")
    low += [k for k, v in (measured.get("tflops") or {}).items()
            if k in sheet["tflops"] and float(v) < PLAUSIBLE_FRACTION * sheet["tflops"][k]]
    return low


def load_ceilings(gpu: str) -> dict[str, Any]:
    """The cached measurement for `gpu`, with datasheet figures for what it lacks or what is implausibly low (see
    PLAUSIBLE_FRACTION); the datasheet alone if none."""
    sheet = datasheet(gpu)
    path = ceilings_path(gpu)
    try:
        measured = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return sheet
    for key in implausible(measured, gpu):
        figure = measured.pop(key) if key == "bandwidth_gbps" else measured["tflops"].pop(key)
        measured.setdefault("source", {})[key] = (
            f"{sheet['source'][key]}: the measured {float(figure):.0f} (in {path}) is under "
            f"{PLAUSIBLE_FRACTION:.0%} of the datasheet's, taken on a busy GPU; the next benchmark measures it again")
    merged = dict(sheet)
    merged.update({k: v for k, v in measured.items() if k not in ("tflops", "source")})
    merged["tflops"] = {**sheet["tflops"], **measured.get("tflops", {})}
    merged["source"] = {**sheet["source"], **measured.get("source", {})}
    merged["path"] = str(path)
    return merged


def save_ceilings(path: Path, ceilings: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(ceilings, indent=1))


def measure_ceilings(dev: Any) -> dict[str, Any]:
    """Copy bandwidth and matmul rates on this GPU (runs in the baseline process, never the harness's)."""
    import torch

    from rungs.timing.inputs import torch_dtype
    from rungs.timing.measure import TimingConfig, measure

    cfg = TimingConfig(cap_s=1.0, min_reps=10, graph_under_us=0.0)
    out: dict[str, Any] = {"gpu": dev.name, "tflops": {}, "source": {}, "torch": torch.__version__,
                           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    # the best of three: another process on the GPU only ever slows a copy down
    best_us = min(measure(lambda s, d: d.copy_(s), [src, dst], dev, cfg)["runtime_us"] for _ in range(3))
    out["bandwidth_gbps"] = 2 * COPY_BYTES / (best_us * 1e-6) / 1e9
    out["source"]["bandwidth_gbps"] = f"measured: {COPY_BYTES >> 20} MiB device-to-device copy, read + written"
    del src, dst
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for name in MEASURED_DTYPES:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            dtype = torch_dtype(name)
            best, best_n = 0.0, 0
            for n in MATMUL_SIZES:
                a = torch.randn(n, n, device="cuda").to(dtype)
                b = torch.randn(n, n, device="cuda").to(dtype)
                r = measure(torch.matmul, [a, b], dev, cfg)
                rate = 2 * n**3 / (r["runtime_us"] * 1e-6) / 1e12
                if rate > best:
                    best, best_n = rate, n
                del a, b
            out["tflops"][name] = best
            out["source"][name] = f"measured: torch.matmul {best_n}^3 on random data"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    dev.release()
    return out


def ensure_ceilings(dev: Any) -> Path:
    """Measure and cache the ceilings of this GPU unless already cached (and plausible)."""
    path = ceilings_path(dev.name)
    try:
        cached = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        cached = None
    if cached is None or implausible(cached, dev.name):
        save_ceilings(path, measure_ceilings(dev))
    return path


# ---- the floor -------------------------------------------------------------------------------------------
def compute_rate(ceilings: dict[str, Any], unit: str, dtype: str) -> tuple[float, str]:
    """TFLOP/s the task's FLOPs run at, and the ceilings key it came from."""
    key = "fp32_fma" if unit == "fp32" else dtype
    return float(ceilings["tflops"][key]), key


def memory_line(row: dict[str, Any], nbytes: float, ceilings: dict[str, Any]) -> float:
    """The fastest the task's bytes are known to move at this shape, as a multiple of the measured device copy: the
    copy itself (1.0), or the eager or torch.compile baseline where one moved the same bytes faster. A copy reads and
    writes one to one; traffic that only reads runs faster (KernelBench's 94_MSELoss at 32768^2 x 2 float32: an honest
    reduction and torch.compile's both read 8.6 GB at 4583 GB/s on the H200, 106.7% of the 4295 GB/s copy, and the
    copy line refused the honest one as impossible). The baselines are timed by the harness's own process at this very
    shape on fresh inputs (rungs/ladder/baseline.py): what they reached is possible, whatever the bytes formula
    says; nothing the candidate runs or writes moves this line."""
    copy = float(ceilings["bandwidth_gbps"])
    best = 1.0
    for key in ("eager_us", "compile_us"):
        us = row.get(key)
        if isinstance(us, (int, float)) and us > 0 and copy > 0:
            best = max(best, nbytes / (us * 1e-6) / 1e9 / copy)
    return best


def floor_seconds(flops: float, nbytes: float, tflops: float, gbps: float) -> tuple[float, str]:
    """max(FLOPs / rate, bytes / bandwidth) and which term binds ('compute' or 'memory')."""
    compute = flops / (tflops * 1e12) if tflops > 0 else 0.0
    memory = nbytes / (gbps * 1e9) if gbps > 0 else 0.0
    return (compute, "compute") if compute > memory else (memory, "memory")


def fraction(floor_s: float, runtime_us: float) -> float:
    return floor_s / (runtime_us * 1e-6) if runtime_us > 0 else float("inf")


def nearest_ceiling(task: Any, bench: RungResult | None) -> str | None:
    """The id of the bench shape timed nearest the measured roofline (highest floor / runtime), or None where that
    cannot be said (no timing, no roofline formulas). The profile rung's ncu run witnesses this shape: a shape over
    100% of the measured roofline (and not impossible) passes only when witnessed, and a kernel that beats the
    library's matmul does so at its largest shape, not always the first one."""
    shapes = (bench.metrics.get("per_shape") or []) if bench is not None and bench.status == "ok" else []
    if len(shapes) < 2 or getattr(task, "roofline", None) is None:
        return None
    ceilings = load_ceilings(str(bench.metrics.get("gpu", "")))
    best: tuple[float, str | None] = (-1.0, None)
    for s in shapes:
        try:
            flops, nbytes = task.floor_terms(s["shape"])
            rate, _ = compute_rate(ceilings, task.roofline.unit, s["dtype"])
        except Exception:  # noqa: BLE001 - a formula that does not evaluate here: the roofline rung says so itself
            return None
        floor_s, _ = floor_seconds(flops, nbytes, rate, ceilings["bandwidth_gbps"])
        frac = fraction(floor_s, float(s.get("runtime_us") or 0.0))
        if frac > best[0]:
            best = (frac, s.get("id"))
    return best[1]


def rung(task: Any, bench: RungResult, below_best: float | None = None) -> RungResult:
    """Fraction of the roofline from the benchmark rung's per-shape medians; ok with target_reached. `below_best`: the
    run's best time, which the profile rung found this candidate slower than and so left unwitnessed (a search's
    --profile improving); a shape over the ceilings is then no faster than that witnessed best, and passes, said."""
    shapes = bench.metrics.get("per_shape") or []
    if not shapes:
        return RungResult(name="roofline", status="skip", message="the benchmark timed no shape")
    if not any(any(task.floor_terms(s["shape"])) for s in shapes):
        # No FLOPs and no bytes: the task has no roofline (a KernelBench problem whose ops could not all be counted
        # says why in its notes); a 0% "not reached" against a zero floor would read as a measurement.
        why = next((n for n in getattr(task, "notes", []) if n.startswith("no roofline")), "")
        return RungResult(name="roofline", status="skip",
                          message=why or "the task gives no roofline (no FLOPs and no bytes at its bench shapes)")
    gpu = str(bench.metrics.get("gpu", ""))
    ceilings = load_ceilings(gpu)
    peak = datasheet(gpu)
    known_gpu = not peak["datasheet"].startswith("unknown GPU")
    rows, impossible = [], []
    total_floor = total_runtime = 0.0
    for s in shapes:
        flops, nbytes = task.floor_terms(s["shape"])
        rate, key = compute_rate(ceilings, task.roofline.unit, s["dtype"])
        floor_s, bound = floor_seconds(flops, nbytes, rate, ceilings["bandwidth_gbps"])
        # The upper ceilings: whichever of measured and datasheet is higher; beating those is impossible.
        upper_rate = max(rate, compute_rate(peak, task.roofline.unit, s["dtype"])[0]) if known_gpu else rate
        upper_bw = max(ceilings["bandwidth_gbps"], peak["bandwidth_gbps"]) if known_gpu else ceilings["bandwidth_gbps"]
        peak_floor_s, _ = floor_seconds(flops, nbytes, upper_rate, upper_bw)
        frac = fraction(floor_s, s["runtime_us"])
        frac_peak = fraction(peak_floor_s, s["runtime_us"])
        label = pairs(s["shape"]) + f" {s['dtype']}"
        rows.append({"id": s.get("id"), "shape": s["shape"], "dtype": s["dtype"], "floor_us": floor_s * 1e6, "bound": bound,
                     "runtime_us": s["runtime_us"], "roofline_fraction": frac, "peak_fraction": frac_peak,
                     "rate_key": key})
        if frac_peak > IMPOSSIBLE_FRACTION:
            impossible.append(f"{label}: {s['runtime_us']:.1f} us is under the {peak_floor_s * 1e6:.1f} us the "
                              f"hardware's peak allows ({frac_peak:.2f}x the roofline)")
        elif bound == "memory" and frac > (line := memory_line(s, nbytes, ceilings)) * (1 + COPY_NOISE_MARGIN):
            past = f" over the baselines' {line * ceilings['bandwidth_gbps']:.0f} GB/s" if line > 1 else ""
            by = "the trusted baselines on the same bytes" if line > 1 else "a device copy of the same bytes"
            impossible.append(f"{label}: {s['runtime_us']:.1f} us moves the task's {nbytes / 1e6:.1f} MB at "
                              f"{nbytes / (s['runtime_us'] * 1e-6) / 1e9:.0f} GB/s, {frac:.1%} of the measured "
                              f"device copy ({ceilings['bandwidth_gbps']:.0f} GB/s, past the "
                              f"{COPY_NOISE_MARGIN:.0%} noise margin{past}): faster than {by}: "
                              "impossible; the timing or the bytes formula is wrong")
        total_floor += floor_s
        total_runtime += s["runtime_us"] * 1e-6
    overall = total_floor / total_runtime if total_runtime > 0 else float("inf")
    target = task.roofline.target
    reached = not impossible and overall >= target
    bound = rows[0]["bound"] if len({r["bound"] for r in rows}) == 1 else "mixed"
    bw_src = ceilings["source"]["bandwidth_gbps"]
    rate_key = rows[0]["rate_key"]
    metrics = {"roofline_fraction": round(overall, 4), "target": target, "target_reached": reached,
               "floor_us": round(total_floor * 1e6, 3), "bound": bound,
               "bandwidth_gbps_ceiling": round(ceilings["bandwidth_gbps"], 1),
               "tflops_ceiling": round(ceilings["tflops"][rate_key], 1),
               "ceilings_source": {"bandwidth_gbps": bw_src, rate_key: ceilings["source"].get(rate_key, "")},
               "per_shape": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]}
    details = _table(rows) + f"\nceilings: {ceilings['bandwidth_gbps']:.0f} GB/s ({bw_src}); " \
                             f"{ceilings['tflops'][rate_key]:.1f} TFLOP/s {rate_key} " \
                             f"({ceilings['source'].get(rate_key, '')})"
    if impossible:
        more = f" (+{len(impossible) - 1} more)" if len(impossible) > 1 else ""
        return RungResult(name="roofline", status="fail", metrics=metrics, details=details + "\n" + "\n".join(impossible),
                          message=f"impossible timing: {impossible[0]}{more}; the kernel cannot be that fast: it skips "
                                  "work, reuses results across calls, or the timing missed work on another stream")
    over_shapes = [r for r in rows if r["roofline_fraction"] > 1.0]
    witness = bench.metrics.get("witness") or {}
    if over_shapes:
        # Over the measured ceilings and not impossible (a compute-bound kernel beating the library's matmul, a
        # memory-bound one within the copy's noise margin) can be right, and is what a timer lied to or a shortcut
        # taken while timed looks like: it passes only when the outside witness (the profile rung's ncu run)
        # measured the same time.
        unwitnessed = [r for r in over_shapes if not witness.get("agrees")
                       or (witness.get("bench_id") and r.get("id") not in (None, witness.get("bench_id")))]
        if unwitnessed and below_best is None:
            r = unwitnessed[0]
            label = pairs(r["shape"]) + f" {r['dtype']}"
            why = ("no outside witness measured it (the profile rung's ncu run did not run or skipped)" if not witness
                   else "the outside witness (Nsight Compute) measured a longer time" if not witness.get("agrees")
                   else "the outside witness measured another bench shape")
            return RungResult(name="roofline", status="fail", metrics=metrics, details=details,
                              message=f"{label}: {r['roofline_fraction']:.1%} of the measured roofline, faster than "
                                      f"{_ceiling_words(r, ceilings)}, and {why}: not accepted unwitnessed")
    where = f"{bound}-bound, floor {total_floor * 1e6:.1f} us"
    over = ""
    if over_shapes:
        r = max(over_shapes, key=lambda r: r["roofline_fraction"])
        label = pairs(r["shape"]) + f" {r['dtype']}"
        how = ("confirmed by the Nsight Compute witness" if not unwitnessed else
               f"not witnessed: slower than the run's best ({below_best:.1f} us), which the witness confirmed")
        over = f" ({label} at {r['roofline_fraction']:.1%}: faster than {_ceiling_words(r, ceilings)}, {how})"
    verdict = f"target {target:.0%} reached" if reached else f"target {target:.0%} not reached"
    if "datasheet" in bw_src or "datasheet" in ceilings["source"].get(rate_key, ""):
        verdict += " (ceilings partly from the datasheet, not measured on this GPU)"
    return RungResult(name="roofline", status="ok", metrics=metrics, details=details,
                      message=f"{overall:.1%} of the roofline ({where}){over}; {verdict}")


def _ceiling_words(row: dict[str, Any], ceilings: dict[str, Any]) -> str:
    """The measured ceiling a shape beat, in words: "cuBLAS's measured 700.0 TFLOP/s (bfloat16 torch.matmul)" for a
    compute-bound shape, the device copy for a memory-bound one; a datasheet figure is named as such."""
    if row["bound"] == "memory":
        measured = str(ceilings["source"].get("bandwidth_gbps", "")).startswith("measured")
        return (f"the {'measured device copy' if measured else 'datasheet bandwidth'} "
                f"({ceilings['bandwidth_gbps']:.0f} GB/s), within the {COPY_NOISE_MARGIN:.0%} noise margin")
    key = row["rate_key"]
    rate = float(ceilings["tflops"][key])
    source = str(ceilings["source"].get(key, ""))
    if source.startswith("measured"):
        return f"cuBLAS's measured {rate:.1f} TFLOP/s ({key} torch.matmul)"
    return f"the {rate:.1f} TFLOP/s {key} rate ({source or 'datasheet'})"


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'shape':<36} {'runtime_us':>11} {'floor_us':>10} {'bound':>8} {'fraction':>9}"]
    for r in rows:
        label = pairs(r["shape"]) + f" {r['dtype']}"
        lines.append(f"{label[:36]:<36} {r['runtime_us']:11.1f} {r['floor_us']:10.1f} {r['bound']:>8} "
                     f"{r['roofline_fraction']:9.3f}")
    return "\n".join(lines)


def climb_rung(climb: "Climb") -> RungResult:
    bench = climb.result("benchmark")
    if bench is None or bench.status != "ok":
        return RungResult(name="roofline", status="skip",
                          message=f"no benchmark timing ({bench.message})" if bench else "no benchmark timing")
    profile = climb.result("profile")
    return rung(climb.task, bench, profile.metrics.get("slower_than_best_us") if profile is not None else None)
