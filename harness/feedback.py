"""What the model is told about the run so far, in the words it needs for the next step.

The prompt templates (harness/prompts/) lay the text out; this module decides what goes in: the machine the
kernel is judged on, the floor time of each bench shape, a one-line reason and the model's own notes per
iteration, the last kernel as a diff against the best, and a failure grouped by what its failing cases share.
It reads the rungs' results as they are recorded (events.jsonl), so it works on old runs as on new ones.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from rungs import backends
from rungs.core.spec import TaskSpec, load_callable
from rungs.core.fmt import pairs

NOTES_CHARS = 240
"""The model's notes shown per history row: enough for its plan in a sentence or two."""
REASON_CHARS = 160


# ---- the machine --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Environment:
    """What the candidate runs on: read at run time, never assumed."""

    dsl: str
    dsl_version: str
    torch_version: str

    def __post_init__(self) -> None:
        if not self.dsl_label:  # made by hand (tests): the registered backend's label
            try:
                label = backends.get(self.dsl).label
            except backends.UnknownBackend:
                label = self.dsl
            object.__setattr__(self, "dsl_label", label)
    gpu: str | None
    """The GPU kernels are timed on, or None: this run has none (interpreter, no timing)."""
    dsl_label: str = ""
    """As a person says it ("Triton", "CuTe DSL"): the backend's label."""
    verifies_on_cpu: bool = True
    """The DSL has an interpreter, so a run without a GPU still checks correctness."""


@functools.lru_cache(maxsize=8)
def environment(dsl: str = "triton") -> Environment:
    """The machine as the task's DSL backend (rungs/backends) and torch report it."""
    import torch

    try:
        backend = backends.get(dsl)
    except backends.UnknownBackend:
        return Environment(dsl=dsl, dsl_version="not installed", torch_version=str(torch.__version__),
                           gpu=_gpu_name(), dsl_label=dsl, verifies_on_cpu=False)
    return Environment(dsl=dsl, dsl_version=backend.version(), torch_version=str(torch.__version__), gpu=_gpu_name(),
                       dsl_label=backend.label, verifies_on_cpu=backend.verifies_on_cpu)


def _gpu_name() -> str | None:
    """The first GPU's name, without starting CUDA in this process (nvidia-smi); None without a usable GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=10).stdout.strip().splitlines()
            if out and out[0].strip():
                return out[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "a CUDA GPU (name unknown)"


TIMING_GPU = "NVIDIA H200"
"""The GPU the floor times are quoted for when this run has none: the machine the tasks' figures come from."""


# ---- the task's contract ----------------------------------------------------------------------------------
def source_of(task: TaskSpec, ref: str, key: str) -> str:
    """The source of a task's `file.py:function` (the reference, the input maker), as the model should read it."""
    try:
        return inspect.getsource(load_callable(task, ref, key)).rstrip() + "\n"
    except (OSError, TypeError):
        return f"(source of {ref} not available)\n"


def tolerances(task: TaskSpec) -> list[dict[str, Any]]:
    """Per dtype, each metric's threshold and which way it compares."""
    from rungs.ladder import metrics as m

    rows = []
    for dtype in task.dtypes:
        over = task.tolerances[dtype].model_dump() if dtype in task.tolerances else None
        limits = m.thresholds(dtype, over)
        rows.append({"dtype": dtype, "limits": [(k, "=" if k in m.ELEMENTWISE else "<=" if m.DIRECTION[k] == "max"
                                                  else ">=", v) for k, v in limits.items()],
                     "rounding": m.ROUNDING[dtype]})
    return rows


def input_layout(task: TaskSpec) -> str:
    """How the inputs come, read from the input maker on the first test shape: dtype, contiguity."""
    from rungs.ladder.cases import TORCH_DTYPES

    try:
        values = load_callable(task, task.inputs, "inputs")(dict(task.shapes.test[0]), TORCH_DTYPES[task.dtypes[0]],
                                                             0, task.distributions[0])
    except Exception as exc:  # the task author's input maker; say so rather than fail the prompt
        return f"(the input maker failed on the first test shape: {type(exc).__name__}: {exc})"
    parts = []
    for i, v in enumerate(values):
        if hasattr(v, "is_contiguous"):
            parts.append(f"input {i}: {str(v.dtype).replace('torch.', '')} tensor, "
                         + ("contiguous" if v.is_contiguous() else f"NOT contiguous (strides {list(v.stride())})"))
        else:
            parts.append(f"input {i}: Python {type(v).__name__}")
    return "; ".join(parts)


@functools.lru_cache(maxsize=8)
def _ceilings(gpu: str) -> dict[str, Any]:
    from rungs.ladder import roofline

    return roofline.load_ceilings(gpu)


def floors(task: TaskSpec, gpu: str | None) -> dict[str, Any]:
    """FLOPs, bytes and the floor time of each bench shape on `gpu` (or the timing GPU when the run has none),
    with where the ceilings come from (measured on that GPU, or its datasheet)."""
    from rungs.ladder import roofline

    where = gpu or TIMING_GPU
    ceilings = _ceilings(where)
    if gpu is None and not ceilings["source"].get("bandwidth_gbps", "").startswith("measured"):
        ceilings = _with_known_measurements(ceilings)
    rows = []
    for shape in task.shapes.bench:
        flops, nbytes = task.floor_terms(shape)
        rate, key = roofline.compute_rate(ceilings, task.roofline.unit, task.dtypes[0])
        seconds, bound = roofline.floor_seconds(flops, nbytes, rate, ceilings["bandwidth_gbps"])
        rows.append({"shape": shape_label(shape), "gflop": flops / 1e9, "mb": nbytes / 1e6, "floor_us": seconds * 1e6,
                     "bound": bound, "target_us": seconds * 1e6 / task.roofline.target if task.roofline.target else None})
    rate, key = roofline.compute_rate(ceilings, task.roofline.unit, task.dtypes[0])
    return {"gpu": where, "rows": rows, "tflops": rate, "rate_key": key, "gbps": ceilings["bandwidth_gbps"],
            "source": _short_source(ceilings["source"].get("bandwidth_gbps", ""), ceilings["source"].get(key, ""))}


KNOWN_H200 = {"bandwidth_gbps": 4250.0, "bfloat16": 785.0, "float16": 785.0}
"""Measured on an H200 (torch 2.11, triton 3.6, 2026-11-30: README 'Measured ceilings'): the figures the tasks' targets
are set against. Quoted when this run has no GPU and nothing measured is cached, so that a CPU run's floors
match the ones the GPU run will judge (the datasheet's 4.8 TB/s and 989 TFLOP/s are 13-26% higher). Better
kept beside the datasheets in rungs/ladder/roofline.py; here until that file can take it."""


def _with_known_measurements(ceilings: dict[str, Any]) -> dict[str, Any]:
    out = {**ceilings, "tflops": dict(ceilings["tflops"]), "source": dict(ceilings["source"])}
    out["bandwidth_gbps"] = KNOWN_H200["bandwidth_gbps"]
    out["source"]["bandwidth_gbps"] = "H200 copy, measured 2026-11-30"
    for key in ("bfloat16", "float16"):
        out["tflops"][key] = KNOWN_H200[key]
        out["source"][key] = "H200 cuBLAS 4096^3, measured 2026-11-30"
    return out


def _short_source(bandwidth: str, rate: str) -> str:
    if bandwidth == rate:
        return bandwidth
    return f"bandwidth: {bandwidth}; rate: {rate}"


def shape_label(shape: dict[str, Any]) -> str:
    return pairs(shape)


def class_entry(task: TaskSpec) -> bool:
    """The entry is a class (a KernelBench task's ModelNew): built per shape, called through its forward."""
    return getattr(task, "write_module_init", None) is not None


# ---- history ----------------------------------------------------------------------------------------------
_FENCED = re.compile(r"```.*?(```|\Z)", re.DOTALL)


def notes_line(notes: str, limit: int = NOTES_CHARS) -> str:
    """The model's notes on one line, without the code it pasted."""
    text = " ".join(_FENCED.sub(" ", notes or "").split())
    if text.startswith(("kernel from ", "pasted kernel")) and len(text) < 200:
        return ""  # the human provider's own label, not a note
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def best_rule(best: Any) -> str:
    """How the best kernel was chosen (harness/store.best_of), said under its heading."""
    if best is None:
        return ""
    if best.verdict.metric("runtime_us") is None:
        return ("Without timings passes are not ranked: the best is the latest kernel that passed every correctness "
                "case (a later pass replaces it).")
    return "The best is the pass with the lowest runtime."


def reason(verdict: Any, limit: int = REASON_CHARS) -> str:
    """One line saying why an iteration ended as it did."""
    if verdict.verdict == "pass":
        runtime = verdict.metric("runtime_us")
        if runtime is None:
            return "pass, untimed (no GPU)"
        frac = verdict.metric("roofline_fraction")
        return f"pass, {runtime:.1f} us" + (f", {frac:.1%} of the roofline" if frac is not None else "")
    if verdict.verdict == "unverified":
        return verdict.summary[:limit]
    failed = verdict.rung(verdict.failed_rung or "")
    text = " ".join((failed.message if failed else "").split())
    text = re.sub(r"^case \S+ \(([^)]*)\): ", r"\1: ", text)
    line = f"{verdict.failed_rung}: {text}"
    return line if len(line) <= limit else line[:limit - 3].rstrip() + "..."


def kernel_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        old_name, new_name, n=2))


# ---- a correctness failure, grouped -------------------------------------------------------------------------
@dataclass
class CaseRow:
    id: str
    shape: dict[str, Any]
    dtype: str
    seed: int
    dist: str
    rel_l2: float
    cosine: float
    ok: bool

    def label(self) -> str:
        return f"{shape_label(self.shape)} {self.dtype} seed={self.seed} {self.dist}"


_ROW = re.compile(r"^(c\d{3})(?:\[\d+\])?\s")


def case_rows(task: TaskSpec, rung: Any) -> list[CaseRow]:
    """Every case of a correctness result: its metrics from the rung's table, its shape, seed and distribution
    from the case plan (the table cuts its labels; the plan is the same function the rung drew the cases with)."""
    from rungs.ladder.cases import plan

    base = rung.metrics.get("base_seed")
    if base is None:
        return []
    planned = plan(task, task.shapes.checked(), task.seeds, int(base))
    rows: dict[str, CaseRow] = {}
    for line in rung.details.splitlines():
        m = _ROW.match(line)
        parts = line.split()
        if not m or len(parts) < 9:
            continue
        n = int(m.group(1)[1:])
        if n >= len(planned):
            continue
        shape, dtype, seed, dist = planned[n]
        try:
            rel_l2, cosine = float(parts[-4]), float(parts[-2])
        except ValueError:
            continue
        ok = parts[-1] == "ok"
        prev = rows.get(m.group(1))
        if prev is not None:  # a case with several outputs fails if any does
            prev.ok, prev.rel_l2 = prev.ok and ok, max(prev.rel_l2, rel_l2)
            continue
        rows[m.group(1)] = CaseRow(m.group(1), dict(shape), dtype, seed, dist, rel_l2, cosine, ok)
    return list(rows.values())


def _predicates(rows: list[CaseRow]) -> list[tuple[str, str, Any]]:
    """(what it says when true, when false, test) over the cases' shape variables and distributions."""
    preds: list[tuple[str, str, Any]] = []
    names = list(dict.fromkeys(k for r in rows for k in r.shape))
    for k in names:
        values = sorted({r.shape.get(k) for r in rows}, key=str)
        if len(values) < 2:
            continue
        for v in values:
            preds.append((f"{k}={v}", f"{k}!={v}" if len(values) > 2 else f"{k}={[x for x in values if x != v][0]}",
                          lambda r, k=k, v=v: r.shape.get(k) == v))
        numbers = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        if len(numbers) == len(values):
            preds.append((f"{k} is a power of 2", f"{k} is not a power of 2",
                          lambda r, k=k: r.shape[k] > 0 and r.shape[k] & (r.shape[k] - 1) == 0))
            for mult in (16, 64):
                preds.append((f"{k} is a multiple of {mult}", f"{k} is not a multiple of {mult}",
                              lambda r, k=k, m=mult: r.shape[k] % m == 0))
            for t in numbers[:-1]:
                preds.append((f"{k}<={t}", f"{k}>{t}", lambda r, k=k, t=t: r.shape[k] <= t))
    for d in sorted({r.dist for r in rows}):
        preds.append((f"inputs {d}", f"inputs not {d}", lambda r, d=d: r.dist == d))
    return preds


def grouping(rows: list[CaseRow]) -> list[str]:
    """What the failing cases share, in a few lines: the condition that holds for exactly the failing cases
    (alone, or with the input distributions they fail on), and for each shape variable and the distribution
    whose values fail at different rates, how many cases of each value fail."""
    if not rows:
        return []
    bad = [r for r in rows if not r.ok]
    good = [r for r in rows if r.ok]
    if not bad:
        return []
    if not good:
        return [f"fails: every case ({len(rows)} of {len(rows)}: every shape, seed and input distribution)"]
    out = [f"{len(bad)} of {len(rows)} cases fail"]
    sides = _sides(_predicates(rows))
    dists = sorted({r.dist for r in bad})
    if len(dists) < len({r.dist for r in rows}):
        sides.append((f"inputs {'/'.join(dists)}", lambda r: r.dist in dists))
    exact = _structural_first([said for said, test in sides if _splits(test, bad, good)])
    if not exact:  # two conditions together: "causal=True and S!=1"
        exact = _structural_first([f"{a} and {b}" for i, (a, ta) in enumerate(sides) for b, tb in sides[i + 1:]
                                   if a.split("=")[0].split(" ")[0] != b.split("=")[0].split(" ")[0]
                                   and _splits(lambda r, ta=ta, tb=tb: ta(r) and tb(r), bad, good)])
    exact = _one_per_variable(exact)
    if exact:
        out.append(f"fails: every case with {exact[0]}; passes: every other case"
                   + (f" (the test shapes split the same way by: {'; '.join(exact[1:4])})" if len(exact) > 1 else ""))
    else:
        out.extend(_by_value(rows))
    return out


def _variables(said: str) -> tuple[frozenset[str], bool]:
    """The variables a condition names, and whether it is about divisibility (a power of 2, a multiple)."""
    return (frozenset(re.split(r"[ =!<>]", part, maxsplit=1)[0] for part in said.split(" and ")),
            "power of 2" in said or "multiple" in said)


def _one_per_variable(said: list[str]) -> list[str]:
    """The first (best ranked) condition on each set of variables: alternatives that name other variables."""
    seen: set[tuple[frozenset[str], bool]] = set()
    out = []
    for text in dict.fromkeys(said):
        key = _variables(text)
        if key not in seen:
            seen.add(key)
            out.append(text)
    return out


def _sides(preds: list[tuple[str, str, Any]]) -> list[tuple[str, Any]]:
    return [s for yes, no, t in preds for s in ((yes, t), (no, lambda r, t=t: not t(r)))]


def _splits(test: Any, bad: list[CaseRow], good: list[CaseRow]) -> bool:
    return all(test(r) for r in bad) and not any(test(r) for r in good)


def _structural_first(said: list[str]) -> list[str]:
    """'N is not a power of 2' says more about a kernel than 'M!=1' when both split the cases alike."""
    def rank(text: str) -> tuple[int, int]:
        kind = 0 if "power of 2" in text or "multiple" in text else 1 if "=" in text and "<" not in text else 2
        return text.count(" and "), kind
    return sorted(said, key=rank)


def _by_value(rows: list[CaseRow]) -> list[str]:
    """'by S: S=1 0/2 fail, S=37 4/4, ...' for each variable (and the distribution) whose values fail at
    different rates; a variable all of whose values fail alike says nothing."""
    axes: list[tuple[str, Any]] = [(k, lambda r, k=k: r.shape.get(k)) for k in dict.fromkeys(k for r in rows for k in r.shape)]
    axes.append(("inputs", lambda r: r.dist))
    out = []
    for name, key in axes:
        counts: dict[Any, list[int]] = {}
        for r in rows:
            c = counts.setdefault(key(r), [0, 0])
            c[0] += not r.ok
            c[1] += 1
        rates = {round(f / n, 3) for f, n in counts.values()}
        if len(counts) < 2 or len(rates) < 2:
            continue
        prefix = "" if name == "inputs" else f"{name}="
        out.append(f"by {name}: " + ", ".join(f"{prefix}{v} {f}/{n} fail" for v, (f, n) in counts.items()))
    return out


def scale_note(rows: list[CaseRow], limit: float | None) -> str | None:
    """A wrong scale (a missing or doubled factor) reads as: the right direction, the wrong length. An error mostly
    across the reference's direction is noise (rounding, TF32 products: rel_l2 3e-4 at cosine 1 - 4e-8), not a
    scale: its part across, sqrt(2 (1 - cosine)) of |ref|, is then about rel_l2 itself, where a scale's is none."""
    bad = [r for r in rows if not r.ok and limit is not None and r.rel_l2 > 10 * limit]
    if not bad or not all(r.cosine >= 0.9999 for r in bad):
        return None
    if any(math.sqrt(2 * max(0.0, 1 - r.cosine)) >= 0.5 * r.rel_l2 for r in bad):
        return None
    r = max(bad, key=lambda r: r.rel_l2)
    return (f"the failing outputs point the right way (cosine >= {min(x.cosine for x in bad):.5f}) but are off by "
            f"rel_l2 up to {r.rel_l2:.3g}: |out| / |ref| is about {max(0.0, 1 - r.rel_l2):.3g} or {1 + r.rel_l2:.3g}; "
            "a scale bug (a factor missing or applied twice, a wrong normalisation), not a wrong pattern")


_ZERO_BAD = re.compile(r"(; )?0 bad elements")


def failure_lines(rung: Any) -> tuple[list[str], list[str]]:
    """The rung's first failure of each shape, with the clauses every one of them shares said once:
    (shared clauses, per-shape lines)."""
    lines = [ln for ln in rung.details.splitlines() if re.match(r"case c\d", ln) or ln.startswith("launch ")]
    if not lines:
        lines = [rung.message]
    split = [[c.strip() for c in _explain(ln).split("; ") if c.strip()] for ln in lines]
    shared: list[str] = []
    if len(split) > 1:
        first = split[0]
        shared = [c for c in first[1:] if all(c in s for s in split[1:]) and not _is_specific(c)]
    out = ["; ".join(c for c in s if c not in shared) for s in split]
    return shared, out


def _is_specific(clause: str) -> bool:
    """Clauses with numbers of one case (metrics, positions) are that case's, even if repeated word for word."""
    return bool(re.search(r"\d", clause)) and not clause.startswith("NaN is")


def _explain(line: str) -> str:
    """The correctness rung's words, where they read as a contradiction to someone acting on them."""
    if _ZERO_BAD.search(line):
        line = _ZERO_BAD.sub("; no single element is past the per-element guard (max_abs_scaled): the error is small "
                             "and spread over many elements, so only the whole-output metrics fail (an accumulation "
                             "or rounding-order loss of precision, not a wrong index)", line)
    last = [d for d, size, where in re.findall(r"dim (\d+) \(size (\d+)\): ([^;]+)", line)
            if int(size) > 1 and where.strip() == str(int(size) - 1)]
    if last:
        line += (f"; only the last index of dim {', '.join(last)} is wrong: the edge (a read past the end, a mask or "
                 "an offset off by one at the last block or slice)")
    return line


def correctness_view(task: TaskSpec, rung: Any) -> dict[str, Any]:
    rows = case_rows(task, rung)
    limit = None
    if rows:
        from rungs.ladder import metrics as m

        dtype = rows[0].dtype
        over = task.tolerances[dtype].model_dump() if dtype in task.tolerances else None
        limit = m.thresholds(dtype, over)["rel_l2"]
    shared, lines = failure_lines(rung)
    note = scale_note(rows, limit)
    return {"groups": grouping(rows), "shared": shared, "lines": lines, "scale_note": note}


# ---- rung results ---------------------------------------------------------------------------------------
DETAILS_ON = {"compile", "run", "benchmark", "profile"}
"""Rungs whose details help the next step when they fail (the compiler's or the worker's own words)."""
PASS_DETAILS_CHARS = 1500


def rung_view(task: TaskSpec, verdict: Any, details_chars: int) -> dict[str, Any]:
    """What to say of each rung of the last iteration: one line each (skips folded into one), the failure in
    full (grouped for correctness), and the details that help the next step: the compiler's output on a
    compile failure, the per-shape timings and the compiled code's summary on a pass. No correctness table on a
    pass, no dumps of test shapes after a failure."""
    lines, skipped, sections = [], [], []
    failed = verdict.failed_rung
    for r in verdict.rungs:
        if r.status == "skip":
            why = r.message.replace("skip: ", "")
            skipped.append((r.name, why))
            continue
        if r.name == failed:
            continue  # said in full in its own section
        lines.append(f"{r.name}: {r.status}" + (f": {r.message}" if r.message else ""))
        tuned = r.metrics.get("autotune") if r.name == "benchmark" else None
        if failed is None and isinstance(tuned, dict) and isinstance(tuned.get("table"), str) and details_chars > 0:
            table = clip_lines(tuned["table"], min(details_chars, PASS_DETAILS_CHARS), "the rest is in the run folder")
            sections.append(("autotune table (* = chosen, the build judged and timed)", table))
        if failed is None and r.details and details_chars > 0 and r.name in ("dumps", "profile"):
            text = largest_first(r.details) if r.name == "dumps" else r.details
            sections.append((f"{r.name} details", clip_lines(text, min(details_chars, PASS_DETAILS_CHARS),
                                                           f"get_dump kind 'txt' for the rest" if r.name == "dumps"
                                                           else "get_profile for the rest")))
    lines += sections_lines(verdict, failed)
    why_groups: dict[str, list[str]] = {}
    for name, why in skipped:
        why_groups.setdefault(why, []).append(name)
    for why, names in why_groups.items():
        lines.append(f"{', '.join(names)}: skipped ({why})")
    failure = None
    if failed:
        r = verdict.rung(failed)
        failure = {"name": failed, "message": r.message if r else "", "groups": [], "shared": [], "lines": [],
                   "scale_note": None, "details": None}
        if failed == "correctness" and r is not None and r.details:
            failure.update(correctness_view(task, r))
        elif r is not None and r.details and details_chars > 0 and failed in DETAILS_ON and r.details.strip() != r.message.strip():
            failure["details"] = clip_lines(r.details, details_chars, "the rest is in the run folder")
    return {"lines": lines, "failure": failure, "sections": sections, "timing": timing_rows(verdict)}


def sections_lines(verdict: Any, failed: str | None) -> list[str]:
    """The sections step on a timed pass: its per-region table, or how to mark regions when none are
    (rungs/ladder/sections.py). Nothing on a CPU run or after a failure: no cycles can be measured there."""
    r, bench = verdict.rung("sections"), verdict.rung("benchmark")
    if failed is not None or r is None or bench is None or bench.status != "ok":
        return []
    if r.status == "ok" and r.details:
        return [f"sections (cycles per region, one instrumented call; get_sections for the whole table):\n{r.details}"]
    if r.status == "skip" and r.details:
        return [f"sections: to see where the cycles go inside your kernel, mark regions: {r.details}"]
    return []


def largest_first(details: str) -> str:
    """The dumps rung's per-kernel blocks: those timed at the bench shapes first (the specializations that are
    timed), then those compiled for the largest test shapes, the nearest to them."""
    blocks = [b for b in re.split(r"\n\s*\n", details.strip()) if b.strip()]

    def size(block: str) -> float:
        m = re.search(r"timed at \(bench\): (.*)", block) or re.search(r"compiled for: (.*)", block)
        n = 1.0
        for v in re.findall(r"=(\d+)\b", m.group(1) if m else ""):
            n *= max(int(v), 1)
        return (n + 1e30 if "timed at" in m.group(0) else n) if m else -1.0

    return "\n\n".join(sorted(blocks, key=size, reverse=True))


def clip_lines(text: str, limit: int, rest: str) -> str:
    """The first whole lines of `text` within `limit` characters, and what to call for the rest."""
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0]
    return f"{kept}\n[... {len(text) - len(kept)} more characters: {rest}]"


def timing_rows(verdict: Any) -> list[dict[str, Any]]:
    """Per bench shape: runtime, floor, fraction of the roofline, and the torch baselines (GPU runs only)."""
    roof = verdict.rung("roofline")
    bench = verdict.rung("benchmark")
    if roof is None or roof.status == "skip" or not roof.metrics.get("per_shape"):
        return []
    base = {shape_label(b["shape"]): b for b in (bench.metrics.get("per_shape") or [])} if bench else {}
    rows = []
    for s in roof.metrics["per_shape"]:
        label = shape_label(s["shape"])
        b = base.get(label, {})
        rows.append({"shape": f"{label} {s['dtype']}", "runtime_us": s["runtime_us"], "floor_us": s["floor_us"],
                     "bound": s["bound"], "fraction": s["roofline_fraction"],
                     "eager_us": b.get("eager_us"), "compile_us": b.get("compile_us")})
    return rows


def fmt(value: Any, spec: str = ".1f") -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return format(value, spec)
    return "-"


def paragraphs_repeated(text: str, min_chars: int = 50) -> list[str]:
    """What a prompt says more than once, outside code blocks (code may repeat: a compiler quotes its line):
    paragraphs of several lines, and the clauses between '; ' of each line (a line without one is one clause),
    of at least `min_chars` characters. The old prompt said 'NaN is the poison ...' once per failing case, and
    the first failure in the rung's line and again in its details."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    units = [b.strip() for b in re.split(r"\n\s*\n", prose) if "\n" in b.strip()]
    for line in prose.splitlines():
        units.extend(re.sub(r"^[-|\s]*(\w+: (ok|fail|skip): )?", "", c).strip(" |.") for c in line.split("; "))
    counted: dict[str, int] = {}
    for unit in units:
        if len(unit) >= min_chars:
            counted[unit] = counted.get(unit, 0) + 1
    return [u for u, n in counted.items() if n > 1]


def version_notes(env: Environment) -> list[str]:
    """API changes of the installed DSL a model trained on older versions would trip on, read from the DSL itself."""
    notes = []
    if env.dsl == "triton":
        try:
            import triton.language as tl

            doc = (getattr(tl, "make_block_ptr", None).__doc__ or "") if hasattr(tl, "make_block_ptr") else "removed"
            if "removed" in doc.lower() and hasattr(tl, "make_tensor_descriptor"):
                notes.append(f"in Triton {env.dsl_version} block pointers (tl.make_block_ptr, tl.advance) are removed: "
                             "use tensor descriptors (tl.make_tensor_descriptor; search_context "
                             "'make_tensor_descriptor' for its signature)")
        except ImportError:
            pass
    return notes
