"""Error metrics of a candidate output against a float64 reference, and the per-dtype thresholds.

For low precision (fp16, bf16, fp8) PSNR and cosine similarity lead, with a max-error guard scaled by the
reference's RMS so that one wrong element cannot hide in a good average. NaN and Inf pass only where the
reference has the same value at the same place.

A task may add an element-wise check, `atol` and `rtol` (torch.allclose's rule: every element within
atol + rtol * |ref|; KernelBench's own check, which its problems carry with upstream's figures). Alone it passes a
kernel that writes zeros where the reference is near zero everywhere; the relative metrics beside it do not, and
the message then says that the allclose check passed and which metric caught it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from rungs.core import fmt

# Defaults per dtype; a task's `tolerances` overrides any of them.
DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "float32": {"max_abs_scaled": 1e-4, "rel_l2": 1e-5, "psnr_db": 90.0, "cosine": 0.999999},
    "tf32": {"max_abs_scaled": 2e-2, "rel_l2": 2e-3, "psnr_db": 55.0, "cosine": 0.99999},
    "float16": {"max_abs_scaled": 2e-2, "rel_l2": 2e-3, "psnr_db": 55.0, "cosine": 0.99999},
    "bfloat16": {"max_abs_scaled": 8e-2, "rel_l2": 1e-2, "psnr_db": 40.0, "cosine": 0.9999},
    "float8_e4m3fn": {"max_abs_scaled": 0.5, "rel_l2": 8e-2, "psnr_db": 22.0, "cosine": 0.995},
    "float8_e5m2": {"max_abs_scaled": 1.0, "rel_l2": 1.5e-1, "psnr_db": 17.0, "cosine": 0.99},
}
# Relative error one correct rounding to the dtype may leave (about two units in the last place). The max-error
# guard forgives this much of each element's own magnitude, so an output that is the exact answer rounded to
# bf16 never fails it, while one wrong element still does.
ROUNDING = {"float32": 2.0**-22, "tf32": 2.0**-10, "float16": 2.0**-10, "bfloat16": 2.0**-7,
            "float8_e4m3fn": 2.0**-3, "float8_e5m2": 2.0**-2}
# A float32 output whose relative L2 error lands in this band missed the way reduced-precision products miss: TF32
# rounds each product's inputs to 10 mantissa bits (2^-11 ~ 4.9e-4 per element), bf16 to 7 (2^-8 ~ 3.9e-3); summed
# over a dot product the output's rel_l2 comes to about 1e-4..5e-3. Honest float32 math (reordered sums) is near
# 1e-7; a wrong kernel is off by far more than 1e-2.
TF32_BAND = (1e-4, 1e-2)
TF32_HINT = ("looks like TF32 or bf16 math (tl.dot's default input_precision is tf32 on the GPU): pass "
             "input_precision=\"ieee\" or allow tf32 in the task")
# How each threshold compares: "max" means the metric must stay at or under it, "min" at or over it.
DIRECTION = {"max_abs_scaled": "max", "rel_l2": "max", "psnr_db": "min", "cosine": "min"}
ELEMENTWISE = ("atol", "rtol")
"""Limits that are not metrics but the element-wise check's terms: |out - ref| <= atol + rtol * |ref| everywhere (a
term left out is 0); its count of elements outside is the metric `allclose_outside`. Checked only where set."""


@dataclass
class Worst:
    index: tuple[int, ...]
    got: float
    expected: float


def compare(out: torch.Tensor, ref: torch.Tensor, rel_allow: float = 0.0,
            allclose: tuple[float, float] | None = None) -> tuple[dict[str, float], Worst | None, str | None]:
    """Metrics of `out` against `ref` (same shape), the worst element, and a non-finite mismatch if any.
    `rel_allow`: the part of each element's magnitude the max-error guard forgives (ROUNDING[dtype]); `allclose`:
    (atol, rtol) of the element-wise check, whose count of elements outside is then `allclose_outside`.

    Returns (metrics, worst, nonfinite_problem). Metrics are over the elements where both are finite.
    """
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64)
    finite_ref = torch.isfinite(exp)
    # Non-finite values pass only where the reference holds exactly the same non-finite value.
    same_nonfinite = (~finite_ref) & ((got == exp) | (torch.isnan(got) & torch.isnan(exp)))
    bad_nonfinite = (~torch.isfinite(got) & finite_ref) | (~finite_ref & ~same_nonfinite)
    problem = None
    if bad_nonfinite.any():
        idx = tuple(int(i) for i in bad_nonfinite.nonzero()[0])
        n = int(bad_nonfinite.sum())
        # Whether a NaN was computed or never written is not known from one output: nan_origin() tells them apart
        # with the determinism re-run over differently poisoned memory.
        problem = (f"{n} of {got.numel()} elements are NaN/Inf where the reference is not (or the reverse); "
                   f"first at {list(idx)}: got {got[idx].item()}, expected {exp[idx].item()}")
    mask = finite_ref & torch.isfinite(got)
    g, e = got[mask], exp[mask]
    return metrics_of(g, e, rel_allow, allclose), worst_of(got, exp, mask), problem


def metrics_of(g: torch.Tensor, e: torch.Tensor, rel_allow: float = 0.0,
               allclose: tuple[float, float] | None = None) -> dict[str, float]:
    """The named metrics of flat float64 tensors `g` (got) and `e` (expected).

    max_abs_scaled is the largest error beyond `rel_allow * |expected|`, over the reference's RMS; with `allclose`
    (atol, rtol), allclose_outside counts the elements where |got - expected| > atol + rtol * |expected|."""
    if g.numel() == 0:
        empty = {"max_abs_err": 0.0, "max_rel_err": 0.0, "mae": 0.0, "mse": 0.0, "rmse": 0.0, "rel_l2": 0.0,
                 "psnr_db": math.inf, "cosine": 1.0, "max_abs_scaled": 0.0, "ref_rms": 0.0}
        return {**empty, "allclose_outside": 0.0} if allclose is not None else empty
    diff = (g - e).abs()
    outside = {} if allclose is None else \
        {"allclose_outside": float((diff > allclose[0] + allclose[1] * e.abs()).sum())}
    excess = float((diff - rel_allow * e.abs()).clamp_min(0).max())
    mse = float((diff**2).mean())
    ref_rms = float(e.pow(2).mean().sqrt())
    ref_peak = float(e.abs().max())
    ref_norm = float(e.norm())
    denom = e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    g_norm = float(g.norm())
    if ref_norm == 0.0 and g_norm == 0.0:
        cosine = 1.0
    elif ref_norm == 0.0 or g_norm == 0.0:
        cosine = 0.0
    else:
        cosine = float((g * e).sum()) / (g_norm * ref_norm)
    return {
        "max_abs_err": float(diff.max()),
        "max_rel_err": float((diff / denom).max()),
        "mae": float(diff.mean()),
        "mse": mse,
        "rmse": math.sqrt(mse),
        "rel_l2": float(diff.norm()) / ref_norm if ref_norm > 0 else (0.0 if float(diff.norm()) == 0 else math.inf),
        "psnr_db": math.inf if mse == 0 else (10 * math.log10(ref_peak**2 / mse) if ref_peak > 0 else -math.inf),
        "cosine": cosine,
        "max_abs_scaled": excess / ref_rms if ref_rms > 0 else (0.0 if excess == 0 else math.inf),
        "ref_rms": ref_rms,
        **outside,
    }


def worst_of(got: torch.Tensor, exp: torch.Tensor, mask: torch.Tensor) -> Worst | None:
    if not mask.any():
        return None
    diff = torch.where(mask, (got - exp).abs(), torch.zeros_like(got))
    flat = int(diff.argmax())
    idx = _unravel(flat, tuple(got.shape))
    return Worst(index=idx, got=float(got[idx]), expected=float(exp[idx]))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element `flat` of a contiguous tensor of `shape`. torch.unravel_index's first call in a process
    imports sympy (0.7 s), a tenth of a `harness check`'s own CPU on the softmax task."""
    idx = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        idx.append(i)
    return tuple(reversed(idx))


def assess(out: torch.Tensor, ref: torch.Tensor, dtype: str,
           limits: dict[str, float]) -> tuple[dict[str, float], Worst | None, list[str]]:
    """The one comparison every judge makes (correctness, launch dependence, the recheck after timing, the
    determinism re-run, bench-shape outputs): `compare` with the dtype's rounding allowance, then the limits.
    Returns (metrics, worst element, what is broken: a non-finite mismatch first, then each limit broken, then
    the likely cause where the error looks like TF32 on a float32 task: precision_hint).
    A judge that compared without the allowance would fail, after timing, a bf16 output correctness passed."""
    metrics, worst, nonfinite = compare(out, ref, ROUNDING.get(dtype, 0.0), elementwise(limits))
    broken = caught_past_allclose(violations(metrics, limits), metrics, limits)
    hint = precision_hint(dtype, metrics) if broken else None
    if hint:
        broken.append(hint)
    if nonfinite:
        broken.insert(0, nonfinite)
    return metrics, worst, broken


def elementwise(limits: dict[str, float]) -> tuple[float, float] | None:
    """(atol, rtol) of the element-wise check where the limits set either term, else None."""
    if not any(k in limits for k in ELEMENTWISE):
        return None
    return float(limits.get("atol", 0.0)), float(limits.get("rtol", 0.0))


def caught_past_allclose(broken: list[str], metrics: dict[str, float], limits: dict[str, float]) -> list[str]:
    """`broken` with the check that caught it named first, where every element passed the element-wise check (so
    KernelBench's allclose would pass the output: a reference near zero everywhere, a constant or zeros close to it)
    and a relative metric did not: rel_l2 leads where it is broken, saying what it measures."""
    pair = elementwise(limits)
    if not broken or pair is None or metrics.get("allclose_outside", 1.0) > 0:
        return broken
    first = next((b for b in broken if b.startswith("rel_l2 ")), broken[0])
    what = " (the error's L2 norm against the reference's own)" if first.startswith("rel_l2 ") else ""
    lead = (f"every element is within atol {fmt.exact(pair[0])} + rtol {fmt.exact(pair[1])} x |ref| "
            f"(KernelBench's allclose passes it) of a reference of RMS {metrics['ref_rms']:.2g}; "
            f"caught by {first}{what}")
    return [lead, *(b for b in broken if b is not first)]


def precision_hint(dtype: str, metrics: dict[str, float]) -> str | None:
    """The likely cause, in words, of a float32 output that misses by about TF32's (or bf16's) rounding
    (TF32_BAND); None otherwise. `assess` adds it after the broken limits, so every judge's message carries it."""
    if dtype == "float32" and TF32_BAND[0] <= metrics.get("rel_l2", 0.0) <= TF32_BAND[1]:
        return TF32_HINT
    return None


def nan_origin(out: torch.Tensor, ref: torch.Tensor, again: torch.Tensor | None, pattern: float) -> dict[str, Any]:
    """Where `out` is NaN and `ref` is not, what the determinism re-run says about each such element. The first
    run's fresh output memory holds NaN, the re-run's `pattern`: an element never written shows the pattern in the
    re-run; one the kernel computed as NaN (0/0, inf - inf) is NaN in both runs, whatever memory held.
    Returns masks {"unwritten", "computed", "unstable", "unknown"} (unknown: no re-run of this case)."""
    got = out.detach().to(torch.float64)
    exp = ref.detach().to(torch.float64)
    bad = got.isnan() & ~exp.isnan()
    none = torch.zeros_like(bad)
    if again is None or again.shape != out.shape:
        return {"unwritten": none, "computed": none, "unstable": none, "unknown": bad}
    second = again.detach().to(torch.float64)
    # The pattern as the output's dtype holds it (bf16 stores 1234.5 as 1232.0).
    stored = float(torch.tensor(pattern, dtype=again.dtype)) if again.is_floating_point() else pattern
    unwritten = bad & (second == stored)
    computed = bad & second.isnan()
    return {"unwritten": unwritten, "computed": computed, "unstable": bad & ~unwritten & ~computed, "unknown": none}


def describe_nan(origin: dict[str, Any]) -> str:
    """The NaN diagnosis in words, most common cause first."""
    parts = []
    for key, words in (("unwritten", "never written (NaN, the poison in fresh output memory, and the 1234.5 poison "
                                     "in the re-run)"),
                       ("computed", "computed NaN (NaN in both runs whatever the output memory held: 0/0, inf - inf, "
                                    "a NaN input or an uninitialized accumulator)"),
                       ("unstable", "NaN in the first run only: a race or a read of uninitialized memory"),
                       ("unknown", "NaN, never written or computed (only the first case of a shape is run twice, "
                                   "which tells the two apart)")):
        n = int(origin[key].sum())
        if n:
            parts.append(f"{n} {words}")
    return "; ".join(parts)


def thresholds(dtype: str, overrides: dict[str, Any] | None = None) -> dict[str, float]:
    merged = dict(DEFAULT_TOLERANCES[dtype])
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return merged


def violations(metrics: dict[str, float], limits: dict[str, float]) -> list[str]:
    """Each threshold the metrics break, as 'rel_l2 0.031 > 0.01' or 'cosine 0.99992 < 0.999999': the limit as
    written, the value with as many digits as it takes to show which side of the limit it is on; the element-wise
    check (ELEMENTWISE) first, as the count of elements outside it, where the metrics hold that count."""
    broken = []
    pair = elementwise(limits)
    if pair is not None and metrics.get("allclose_outside", 0.0) > 0:
        broken.append(f"{int(metrics['allclose_outside'])} element(s) outside |out - ref| <= atol {fmt.exact(pair[0])} "
                      f"+ rtol {fmt.exact(pair[1])} x |ref| (KernelBench's allclose)")
    for name, limit in limits.items():
        if name in ELEMENTWISE:
            continue
        value = metrics[name]
        if DIRECTION[name] == "max" and not value <= limit:
            broken.append(f"{name} {fmt.against(value, limit)} > {fmt.exact(limit)}")
        if DIRECTION[name] == "min" and not value >= limit:
            broken.append(f"{name} {fmt.against(value, limit)} < {fmt.exact(limit)}")
    return broken
