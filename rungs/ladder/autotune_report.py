"""The parent's side of a declared config space (rungs/worker/autotune.py): what the compile phase compiled, and on a
GPU the autotune table, with every reported point checked against the reference.

The worker times the points and chooses one (rungs/worker/bench.tune_space); that one is the judged build (every
correctness case, the bench-shape checks, the benchmark's timing). Every other point ran the largest test case in
the run phase, and is checked here with the task's tolerances, so no number in the table belongs to a point that
computes wrong without the table saying so.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.spec import TaskSpec

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

PLAIN_VALUE = re.compile(r"-?[\d.]+(?:e-?\d+)?|True|False|None")


def _plain(label: Any, names: set[str]) -> bool:
    """`[kernel: ]key=value key=value[; kernel: ...]` with every kernel and key a name of the source, every value a
    number, a bool or a name of the source."""
    if not isinstance(label, str) or not label or len(label) > 300:
        return False
    for part in label.split("; "):
        prefix, sep, rest = part.rpartition(": ")
        if sep and prefix not in names:
            return False
        for token in rest.split(" "):
            key, eq, value = token.partition("=")
            if token != "default" and not (eq and key in names and (PLAIN_VALUE.fullmatch(value) or value in names)):
                return False
    return True


def safe_labels(labels: Any, kernel: Path) -> list[str]:
    """The worker's labels, kept only where they are made of what the candidate's source holds and plain values (as
    kernel names are, rungs/sandbox/pool._accept_names): a label made of something it read elsewhere would carry that
    out into prompts. Others become `config k`."""
    names = _source_names(kernel)
    return [label if _plain(label, names) else f"config {k}"
            for k, label in enumerate(labels if isinstance(labels, list) else [])]


def _source_names(kernel: Path) -> set[str]:
    from rungs.sandbox.pool import kernel_names

    return set(kernel_names(kernel)) | {"num_warps", "num_stages", "num_ctas", "maxnreg"}


def failed_config(phase: dict[str, Any], kernel: Path) -> str:
    """' (in CONFIGS[k], its label)' where the worker says a declared config failed to compile, else ''."""
    found = phase.get("config")
    if not (isinstance(found, list) and len(found) == 2 and isinstance(found[0], int)):
        return ""
    label = found[1] if _plain(found[1], _source_names(kernel)) else ""
    return f" (in CONFIGS[{found[0]}]" + (f": {label})" if label else ")")


def compiled_space(phase: dict[str, Any], device: str, kernel: Path, interpreted: bool = True) -> dict[str, Any] | None:
    """The compile rung's words and metrics for a declared space (None: the candidate declares none)."""
    space = phase.get("autotune")
    if not isinstance(space, dict):
        return None
    labels = safe_labels(space.get("configs"), kernel)
    n = len(labels)
    kind = "CONFIGS" if space.get("kind") == "CONFIGS" else "@triton.autotune"
    default = "CONFIGS[0]" if kind == "CONFIGS" else "each autotuned kernel's first config"
    timing = ("each is timed at the bench shapes (benchmark)" if device == "cuda"
              else f"timing needs a GPU (the interpreter runs the default, {default})" if interpreted
              else "timing needs a GPU")
    dropped = _dropped(space.get("dropped"), n)
    built = f"{n} configs compiled ({kind})"
    if dropped:
        built = (f"{n - len(dropped)} of {n} configs compiled ({kind}); dropped as past the hardware at the largest "
                 "test shape, never timed nor chosen: " + "; ".join(f"CONFIGS[{k}] {labels[k]}: {why}"
                                                                  for k, why in dropped.items()))
    return {"message": f"{built}; {timing}",
            "metrics": {"kind": kind, "configs": n, "labels": labels, "dropped": {str(k): v for k, v in dropped.items()}}}


def _dropped(raw: Any, n: int) -> dict[int, str]:
    """The worker's dropped points ({index: why}), its words kept to one printable line each: they reach the prompt."""
    if not isinstance(raw, dict):
        return {}
    out: dict[int, str] = {}
    for key, why in raw.items():
        if str(key).isdigit() and 0 < int(key) < n and isinstance(why, str):
            out[int(key)] = " ".join("".join(c if c.isprintable() else " " for c in why).split())[:160]
    return dict(sorted(out.items()))


def _check_others(climb: "Climb", run: dict[str, Any]) -> dict[int, str]:
    """Each non-chosen point's output on the largest test case against its reference: 'ok', or why not."""
    import torch

    from rungs.ladder import metrics as m

    task: TaskSpec = climb.task
    others = run.get("other_configs") or {}
    case = next((c for c in climb.cases if c.id == others.get("case")), None)
    found: dict[int, str] = {}
    if case is None or climb.job_dir is None:
        return found
    tol = task.tolerances.get(case.dtype)
    limits = m.thresholds(case.dtype, tol.model_dump() if tol else None)
    for key, error in (others.get("errors") or {}).items():
        dropped = str(error).startswith("dropped (")  # at compile, autotune or run: past the hardware, not wrong
        found[int(key)] = "dropped (past the hardware)" if dropped else f"raised: {str(error)[:120]}"
    for key, name in (others.get("files") or {}).items():
        path = climb.job_dir / str(name)
        if not re.fullmatch(r"out-\w+-cfg\d+\.pt", str(name)) or not path.is_file():
            found[int(key)] = "no output"
            continue
        outs = torch.load(path, weights_only=True)
        refs = case.reference or []
        if len(outs) != len(refs) or any(not isinstance(o, torch.Tensor) or o.shape != r.shape
                                         for o, r in zip(outs, refs)):
            found[int(key)] = "wrong outputs (count or shape)"
            continue
        broken = [b for o, r in zip(outs, refs) for b in m.assess(o, r, case.dtype, limits)[2]]
        found[int(key)] = f"WRONG at {case.id}: {broken[0][:120]}" if broken else f"ok ({case.id})"
    return found


def table(climb: "Climb") -> dict[str, Any] | None:
    """The autotune phase's table as metrics, a text table and a one-line summary; None without a timed space."""
    assert climb.outcome is not None
    phase = climb.outcome.phases.get("autotune") or {}
    rows = phase.get("configs")
    if not isinstance(rows, list) or not rows:
        return None
    labels = safe_labels([r.get("label") for r in rows], climb.kernel)
    winner = int(phase.get("winner", 0))
    checks = _check_others(climb, climb.outcome.phases.get("run") or {})
    bench_ids = [e["id"] for e in (climb.job.bench if climb.job else [])]
    entries = []
    for r, label in zip(rows, labels):
        k = int(r.get("config", 0))
        per = r.get("per_shape") or {}
        check = "chosen: judged on every case" if k == winner else checks.get(k, "not run")
        no_launch = sum(int(v.get("no_launch", 0)) for v in per.values())
        if no_launch:
            check += f"; {no_launch} timed call(s) launched no kernel"
        entries.append({"config": k, "label": label, "status": str(r.get("status", "?")),
                        "runtime_us": r.get("runtime_us"), "check": check, "winner": k == winner,
                        "per_shape_us": {b: per[b]["runtime_us"] for b in bench_ids if b in per},
                        "error": str(r.get("error", ""))[:200]})
    timed = [e for e in entries if isinstance(e["runtime_us"], (int, float))]
    best = next(e for e in entries if e["winner"])
    slowest = max((e["runtime_us"] for e in timed), default=None)
    wrong = [e["config"] for e in entries if e["check"].startswith(("WRONG", "wrong", "raised"))]
    seconds, budget = float(phase.get("seconds", 0.0)), float(phase.get("budget_s", 0.0))
    summary = (f"autotuned {len(timed)}/{len(entries)} configs in {seconds:.1f} s (budget {budget:.0f} s): "
               f"chose #{best['config']} ({best['label']})")
    if best["runtime_us"] and slowest:
        summary += f", {slowest / best['runtime_us']:.2f}x the slowest"
    if not timed:
        summary = f"no config of the {len(entries)} could be timed: the default (#0) is judged"
    dropped = [e["config"] for e in entries if e["status"] == "dropped" or e["check"].startswith("dropped")]
    if dropped:
        summary += f"; {', '.join(f'#{k}' for k in dropped)} dropped as past the hardware"
    if wrong:
        summary += f"; configs {', '.join(f'#{k}' for k in wrong)} fail their check (see the table)"
    return {"metrics": {"winner": best["config"], "label": best["label"], "configs": entries,
                        "seconds": round(seconds, 3), "budget_s": budget, "kind": phase.get("kind")},
            "table": text_table(entries, bench_ids), "message": summary}  # metrics get the table: feedback shows it


def text_table(entries: list[dict[str, Any]], bench_ids: list[str]) -> str:
    """One line per config: its total and per-shape medians, whether it was checked, the winner marked."""
    width = max([len(e["label"]) for e in entries] + [6])
    head = f"{'':2}{'#':>3} {'config':<{width}} {'total_us':>10} " + " ".join(f"{b + '_us':>10}" for b in bench_ids) \
        + "  check"
    lines = [head]
    for e in entries:
        total = f"{e['runtime_us']:10.1f}" if isinstance(e["runtime_us"], (int, float)) else f"{e['status']:>10}"
        shapes = " ".join(f"{e['per_shape_us'][b]:10.1f}" if b in e["per_shape_us"] else f"{'-':>10}"
                          for b in bench_ids)
        note = e["check"] + (f"; {e['error']}" if e["error"] else "")
        lines.append(f"{'* ' if e['winner'] else '  '}{e['config']:>3} {e['label']:<{width}} {total} {shapes}  {note}")
    return "\n".join(lines)
