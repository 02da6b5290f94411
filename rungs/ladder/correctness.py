"""The run and correctness rungs' judgement: the candidate's outputs against float64 references.

The outputs come back from the worker as plain tensors (torch.load with weights_only, so no object of the
candidate's making is ever unpickled here); the references never left this process.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rungs.core.spec import TaskSpec
from rungs import backends
from rungs.core import fmt
from rungs.ladder import integrity, outputs
from rungs.ladder import metrics as m
from rungs.ladder.cases import TORCH_DTYPES, Case, probe_index
from rungs.core.result import RungResult
from rungs.worker.job import POISON_PATTERN

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb


def expected_dtype(case: Case, ref: Any = None) -> str:
    """The dtype an output must have: the case's for a floating reference (the references are float64), the
    reference's own for an integer or boolean one (an argmax gives int64 whatever the input dtype)."""
    if ref is not None and not ref.is_floating_point():
        return str(ref.dtype).replace("torch.", "")
    return str(TORCH_DTYPES[case.dtype]).replace("torch.", "")


def check_outputs(cases: list[Case], results: list[dict[str, Any]], device: str, task: TaskSpec) -> list[str]:
    """Problems with what the candidate returned (count, type, shape, dtype, device, touched inputs), per case, from
    the run phase's description: early, readable feedback. The description is the worker's claim; the correctness
    rung checks the saved outputs themselves against `outputs.of_case` (rungs/ladder/outputs.py). A planned case the
    worker does not describe is a problem here, never a case skipped."""
    problems = []
    by_id = {r.get("id"): r for r in results if isinstance(r, dict)}
    missing = [c.id for c in cases if c.id not in by_id]
    if missing or not cases:
        return [f"the run phase reported {len(by_id)} of the {len(cases)} planned cases (missing: "
                f"{', '.join(missing[:8]) or 'all'}): every case must be run"]
    for case in cases:
        res = by_id[case.id]
        where = f"case {case.id} ({case.label()})"
        refs = case.reference or []
        outs = res["outputs"]
        if len(outs) != len(refs):
            problems.append(f"{where}: returned {len(outs)} output(s), expected {len(refs)}")
            continue
        for i, (out, ref) in enumerate(zip(outs, refs)):
            name = task.output_name(i, len(refs))
            if out["kind"] != "tensor":
                problems.append(f"{where}: {name} is a {out['kind']}, not a plain torch.Tensor")
            elif out["shape"] != list(ref.shape):
                problems.append(f"{where}: {name} has shape {out['shape']}, expected {list(ref.shape)}")
            elif out["dtype"] != expected_dtype(case, ref):
                problems.append(f"{where}: {name} has dtype {out['dtype']}, expected {expected_dtype(case, ref)}")
            elif out["device"] != device:
                problems.append(f"{where}: {name} is on {out['device']}, expected {device}")
            elif not out["contiguous"]:
                problems.append(f"{where}: {name} has strides {out['stride']}, expected a contiguous tensor")
        if res["inputs_changed"]:
            problems.append(f"{where}: the kernel wrote into input(s) {res['inputs_changed']}; inputs must stay unchanged")
        if res["launches"] == 0 and not task.allow_torch_compute:
            problems.append(f"{where}: no {backends.get(task.dsl).label} kernel was launched for this case "
                            "(computed in torch?)")
    return problems


def rung(climb: "Climb") -> RungResult:
    assert climb.job_dir is not None
    result = judge(climb.cases, climb.job_dir, climb.task, climb.base_seed)
    tuned = (climb.outcome.phases.get("autotune") or {}) if climb.outcome is not None else {}
    if result.status == "fail" and tuned.get("configs"):  # the judged build is the point the autotune phase chose
        from rungs.ladder.autotune_report import safe_labels

        k = int(tuned.get("winner", 0))
        labels = safe_labels([c.get("label") for c in tuned["configs"]], climb.kernel)
        label = labels[k] if 0 <= k < len(labels) else "?"
        result.message += f" (judged: autotuned config #{k}, {label}, the fastest of {len(tuned['configs'])})"
    return result


def judge(cases: list[Case], job_dir: Path, task: TaskSpec, base_seed: int | None = None,
          run_cases: list[dict[str, Any]] | None = None, finished: bool = True) -> RungResult:
    """The cases' outputs against their references. `finished=False`: the cases a worker finished before it died
    (run.rung says what they show): the comparisons alone, not the checks of the whole run (the probe, one build,
    every planned output)."""
    rows = []
    failures = []
    worst_case: dict[str, float] = {}
    seen: dict[str, tuple[str, str]] = {}  # output fingerprint -> the first case that returned it, its reference
    probe = cases[probe_index(cases)] if cases and finished else None
    if run_cases is None:  # the run phase's own record (the ladder reads the same file)
        try:
            run_cases = json.loads((job_dir / "phase-run.json").read_text()).get("cases", [])
        except (OSError, json.JSONDecodeError):
            run_cases = []
    probe_errors = {c["id"]: c["probe_error"] for c in run_cases if c.get("probe_error")}
    for case in cases:
        try:
            outs = outputs.load(job_dir / f"out-{case.id}.pt", outputs.of_case(case))
        except outputs.OutputRefused as exc:
            failures.append((tuple(case.shape.items()), f"case {case.id} ({case.label()}): {exc}"))
            continue
        again_path = job_dir / f"out-{case.id}-again.pt"
        try:
            again = outputs.load(again_path, outputs.of_case(case)) if again_path.is_file() else None
        except outputs.OutputRefused as exc:
            failures.append((tuple(case.shape.items()), f"case {case.id} ({case.label()}), determinism re-run: {exc}"))
            continue
        limits = m.thresholds(case.dtype, task.tolerances[case.dtype].model_dump() if case.dtype in task.tolerances else None)
        for i, (out, ref) in enumerate(zip(outs, case.reference or [])):
            metrics, worst, broken = m.assess(out, ref, case.dtype, limits)
            second = again[i] if again is not None and i < len(again) else None
            origin = m.nan_origin(out, ref, second, POISON_PATTERN) if isinstance(out, torch.Tensor) else None
            nan_words = m.describe_nan(origin) if origin is not None else ""
            if nan_words:  # a NaN mismatch puts the non-finite problem first: say which NaNs were computed
                broken[0] += f" ({nan_words})"
            tag = f"{case.id}" + (f" {task.output_name(i, len(outs)).removeprefix('output ')}" if len(outs) > 1 else "")
            if second is not None and not broken:
                drift = nondeterminism(out, second, case.dtype, limits)
                if drift:
                    broken.append(drift)
            rows.append((tag, case.label(), metrics, "FAIL" if broken else "ok"))
            for k in ("max_abs_err", "rel_l2", "max_abs_scaled"):
                worst_case[k] = max(worst_case.get(k, 0.0), metrics[k])
            for k in ("psnr_db", "cosine"):
                worst_case[k] = min(worst_case.get(k, float("inf")), metrics[k])
            if broken:
                stale = integrity.stale_note([out], [ref], seen)
                if stale:
                    broken.append(stale)
                where = ""
                if worst is not None:
                    got, expected = fmt.pair(worst.got, worst.expected)
                    where = f"; worst element {list(worst.index)}: got {got}, expected {expected}"
                picture = error_picture(out, ref, limits["max_abs_scaled"] * max(metrics["ref_rms"], 1e-30), origin)
                failures.append((tuple(case.shape.items()), f"case {tag} ({case.label()}): {'; '.join(broken)}{where}; {picture}"))
        integrity.remember(case.id, outs, case.reference or [], seen)
        independent = integrity.launch_independence(case, job_dir, limits, probed=case is probe,
                                                    probe_error=probe_errors.get(case.id),
                                                    label=backends.get(task.dsl).label)
        if independent:
            failures.append((tuple(case.shape.items()), independent))
    if finished and (not cases or len(rows) < sum(len(c.reference or []) for c in cases)):
        failures.append(((), f"{len(rows)} output(s) compared of the {sum(len(c.reference or []) for c in cases)} "
                             f"planned over {len(cases)} case(s): every planned output must be compared"))
    split = integrity.one_build(job_dir, cases, interpreted=not torch.cuda.is_available()) if finished else None
    if split:
        failures.insert(0, ((), split))
    table = metric_table(rows)
    metrics_out: dict[str, float | int | None] = {k: float(f"{v:.4g}") for k, v in worst_case.items()}
    metrics_out["cases"] = len(rows)
    metrics_out["base_seed"] = base_seed
    if failures:
        more = f" (+{len(failures) - 1} more failing cases)" if len(failures) > 1 else ""
        first_per_shape = list({shape: text for shape, text in reversed(failures)}.values())[::-1]
        return RungResult(name="correctness", status="fail", message=failures[0][1] + more, metrics=metrics_out,
                          details=f"{len(failures)} of {len(rows)} cases fail; the first failure of each shape:\n"
                                  + "\n".join(first_per_shape) + "\n\n" + table)
    return RungResult(name="correctness", status="ok", metrics=metrics_out, details=table,
                      message=f"{len(rows)} cases match the float64 reference "
                              f"(worst rel_l2 {worst_case.get('rel_l2', 0):.2g}, worst max_abs_scaled "
                              f"{worst_case.get('max_abs_scaled', 0):.2g})")


def nondeterminism(first: torch.Tensor, second: torch.Tensor, dtype: str, limits: dict[str, float]) -> str | None:
    """The same inputs run twice, the second time over memory poisoned differently: they must agree to rounding."""
    if first.shape != second.shape:
        return f"a second run on the same inputs returned shape {list(second.shape)}: nondeterministic"
    # A tenth of the correctness limit: two runs of one kernel differ by reordered rounding at most (an atomic
    # accumulation in bf16 may land an ulp apart, which the dtype's allowance forgives).
    _, worst, broken = m.assess(second, first, dtype, {"max_abs_scaled": limits["max_abs_scaled"] / 10})
    if broken:
        at = " (first at {}: {} then {})".format(list(worst.index), *fmt.pair(worst.expected, worst.got)) if worst else ""
        return ("a second run on the same inputs, with output memory poisoned differently, gave a different "
                f"answer{at}: suspected race or read of uninitialized memory")
    return None


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2, 5, 7-8' (at most a few ranges)."""
    spans: list[list[int]] = []
    for i in indices:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans[:6])
    return text + (f", ... ({len(spans)} ranges)" if len(spans) > 6 else "")


def _where(mask: torch.Tensor) -> str:
    """For each dimension, the indices that hold any True element of `mask`, as ranges."""
    parts = []
    for d in range(mask.dim()):
        hit = mask.transpose(0, d).reshape(mask.shape[d], -1).any(dim=1).nonzero().flatten().tolist()
        parts.append(f"dim {d} (size {mask.shape[d]}): {'all' if len(hit) == mask.shape[d] else _ranges(hit)}")
    return "; ".join(parts)


def error_picture(out: torch.Tensor, ref: torch.Tensor, tol: float, origin: dict[str, Any] | None = None) -> str:
    """Where the bad elements sit: for each dimension, which indices hold any ('dim 1 (size 6): 5'); elements
    never written (the re-run shows its own poison there) and NaNs the kernel computed are pictured on their own
    (`origin`: metrics.nan_origin)."""
    got, exp = out.to(torch.float64), ref.to(torch.float64)
    bad = ~(((got - exp).abs() <= tol) | ((got == exp) | (got.isnan() & exp.isnan())))
    n = int(bad.sum())
    if n == 0 or bad.dim() == 0:
        return f"{n} bad elements"
    text = f"{n} of {bad.numel()} elements off ({fmt.percent(n, bad.numel())}); {_where(bad)}"
    if origin is None:
        origin = m.nan_origin(out, ref, None, POISON_PATTERN)
    for key, words in (("unwritten", "never written (still NaN)"), ("computed", "computed NaN"),
                       ("unstable", "NaN in the first run only"), ("unknown", "NaN (written or not)")):
        mask = origin[key]
        if mask.any() and not mask.equal(bad):
            text += f"; {words}: {_where(mask)}"
    return text


def metric_table(rows: list[tuple[str, str, dict[str, float], str]]) -> str:
    head = f"{'case':<7} {'shape / dtype / seed / inputs':<44} {'max_abs':>9} {'max_rel':>9} {'mae':>9} {'rmse':>9} " \
           f"{'rel_l2':>9} {'psnr_db':>8} {'cosine':>10} verdict"
    lines = [head]
    for tag, label, x, verdict in rows:
        lines.append(f"{tag:<7} {label[:44]:<44} {x['max_abs_err']:9.2e} {x['max_rel_err']:9.2e} {x['mae']:9.2e} "
                     f"{x['rmse']:9.2e} {x['rel_l2']:9.2e} {x['psnr_db']:8.1f} {x['cosine']:10.7f} {verdict}")
    return "\n".join(lines)
