"""The sections step: where the cycles go inside a kernel, per region the candidate marked.

A candidate marks regions with its DSL's own markers (Triton: Proton's `triton.profiler.language` scopes; see the
backend's sections module, named by `Backend.sections_module`). The markers compile to nothing in the timed build:
this step builds the kernel again, instrumented, in a sandboxed process of its own (rungs/worker/sections_target.py),
calls it once at the bench shape the profile rung profiled (the first where there was none); that process summarizes the
records (rungs/backends/sections_summary.py) and keeps a trace of the first programs for Perfetto. The benchmark's time
never comes from that build.

Per region it returns: total cycles over all programs, mean cycles per program, its share of the programs' time
(the sum over programs of each program's span from its first record to its last), and the spread across programs
(the slowest program's cycles over the mean: load imbalance). A warp's records are its own; a program's cycles in a
region are the mean over its warps (they run side by side). An unmarked kernel costs nothing: one line, "no sections
marked". On a CPU the step skips ("no GPU"): the markers are compiled away there and nothing runs.
"""
from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.result import RungResult
from rungs.backends.sections_summary import TRACE_PROGRAMS, accounted_us
from rungs.worker.job import SECTIONS_FILE
from rungs.core.fmt import pairs
from rungs.sandbox.pool import _plain_file

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

TIMEOUT_S = 300.0
RESULT_MAX_BYTES = 16 << 20
TRACE_MAX_BYTES = 256 << 20
"""The trace kept in the dumps (the first TRACE_PROGRAMS programs: 14 MB for the H200's flash attention)."""
TRACE_FILE = "sections.trace.json"
"""The DSL's own trace, kept in the dumps for Perfetto (ui.perfetto.dev opens chrome traces)."""
NOT_MARKED = "no sections marked"
GAP_ROWS = 3
"""Rows of unmarked time between regions the table shows (the largest)."""
HOW_TO_MARK = {
    "triton": "import triton.profiler.language as pl; inside the @triton.jit function wrap a region in "
              "`with pl.scope(\"qk\"):` (or pl.enter_scope(\"qk\") ... pl.exit_scope(\"qk\")); the timed build is "
              "unchanged",
    "cuda": "inside a kernel of the CUDA source write KH_SECTION_BEGIN(qk); ... KH_SECTION_END(qk); (a name, not a "
            "string; both in one scope); the harness defines them, empty in the timed build",
    "cute": "from rungs.backends.cute_sections import section_begin, section_end; inside the @cute.kernel write "
            "`t = section_begin(\"qk\")` ... `section_end(\"qk\", t)`; they add nothing to the timed build",
    "tilelang": "from rungs.backends.tilelang_sections import section_begin, section_end; inside the T.Kernel block "
                "write `section_begin(\"qk\")` ... `section_end(\"qk\")` around statements at one nesting level; "
                "they add nothing to the timed build",
}
"""How to mark a region, per DSL, for the prompt when none is marked."""


def sections_module(backend: Any) -> Any | None:
    """The backend's sections module (regions, instrumented, collect), or None where its DSL has
    none yet."""
    name = getattr(backend, "sections_module", "") if backend is not None else ""
    return importlib.import_module(name) if name else None


def marked_regions(backend: Any, source: str) -> list[str]:
    module = sections_module(backend)
    return module.regions(source) if module is not None else []


def table(summary: dict[str, Any]) -> str:
    """The short table the model and the reviewer read."""
    rows = ["| region | share | mean cycles/program | total cycles | spread (max/mean) |", "|---|---|---|---|---|"]
    for r in summary["regions"]:
        share = f"{r['share']:.1%}" if r["share"] is not None else "-"
        spread = f"{r['spread']:.2f}" if r["spread"] is not None else "-"
        rows.append(f"| {r['region']} | {share} | {r['mean_cycles']:.0f} | {r['total_cycles']} | {spread} |")
    gaps = summary.get("gaps") or []
    for g in gaps[:GAP_ROWS]:
        rows.append(f"| (unmarked) {g['between']} | {(g['share'] or 0.0):.1%} | | {g['total_cycles']} | |")
    covered = summary.get("covered")
    unmarked = sum(g["share"] or 0.0 for g in gaps)
    rows.append(f"{summary['programs']} program(s); the regions cover "
                + (f"{covered:.0%}" if covered is not None else "?") + " of the programs' time (regions that nest "
                f"are counted in each), the time between them {unmarked:.0%}; the rest is before each warp's first "
                "record and after its last. An asynchronous MMA (wgmma) is waited for after the region that issues "
                "it: its time can show in the gap that follows.")
    return "\n".join(rows)


def headline(summary: dict[str, Any]) -> str:
    parts = [f"{r['region']} {r['share']:.0%}" for r in summary["regions"] if r["share"] is not None]
    worst = max((r for r in summary["regions"] if r["spread"]), key=lambda r: r["spread"], default=None)
    spread = f"; most uneven: {worst['region']} (slowest program {worst['spread']:.2f}x the mean)" if worst else ""
    gap = next(iter(summary.get("gaps") or []), None)
    unmarked = f"; unmarked {gap['between']} {gap['share']:.0%}" if gap and (gap["share"] or 0) >= 0.05 else ""
    return ", ".join(parts) + unmarked + spread


def run_target(climb: "Climb", entry: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """The instrumented build in the sandbox: its own folder holding a copy of the kernel (as for the profile)."""
    from rungs.ladder.judged_build import write_job
    from rungs.sandbox.pool import job_readable, run_command, scrub
    from rungs.worker.job import Job

    job_dir: Path = (climb.job_dir or climb.work_dir / "job") / "sections"
    target_job = write_job(climb, job_dir, entry, "sections-job.json",
                           sections_module=climb.backend.sections_module)
    out = job_dir.parent / "sections.out"
    outcome = run_command([sys.executable, "-m", "rungs.worker.sections_target", str(target_job.resolve())], job_dir,
                          TIMEOUT_S, out, readable=job_readable(Job(bench=[entry])),
                          extra_env=climb.pool.pinned_env() if climb.pool else None)
    result_path = job_dir / SECTIONS_FILE
    if outcome.timed_out:
        return {"error": f"the instrumented build timed out after {TIMEOUT_S:.0f} s"}, job_dir
    # The candidate's process wrote the folder: only a plain file is read (a link would have the harness read a
    # host file for it), of a summary's size, and only what the step expects of it is kept.
    if not _plain_file(result_path, RESULT_MAX_BYTES):
        tail = scrub(outcome.log_tail).strip().splitlines()[-1:] or [f"exit code {outcome.returncode}"]
        return {"error": f"the instrumented build wrote no result: {tail[0][:300]}"}, job_dir
    try:
        return checked(json.loads(result_path.read_text(errors="replace"))), job_dir
    except (ValueError, TypeError, KeyError, AttributeError):
        return {"error": "the instrumented build wrote a result the step cannot read"}, job_dir


def checked(result: Any) -> dict[str, Any]:
    """What the sections target returned, typed and bounded (raises on anything else): its error, or its summary,
    the trace's file name (a plain name in the job folder) and the device figures."""
    if "error" in result:
        return {"error": str(result["error"])[:400]}
    s = result["summary"]

    def num(v: Any) -> float | None:
        return None if v is None else float(v)

    regions = [{"region": str(r["region"])[:64], "total_cycles": int(r["total_cycles"]),
                "mean_cycles": float(r["mean_cycles"]), "share": num(r["share"]), "programs": int(r["programs"]),
                "spread": num(r["spread"])} for r in list(s["regions"])[:64]]
    gaps = [{"between": str(g["between"])[:140], "total_cycles": int(g["total_cycles"]), "share": num(g["share"])}
            for g in list(s.get("gaps") or [])[:64]]
    summary = {"regions": regions, "gaps": gaps, "programs": int(s["programs"]),
               "program_cycles": int(s["program_cycles"]), "warps_per_program": num(s.get("warps_per_program")),
               "covered": num(s.get("covered")), "kernel_ns": num(s.get("kernel_ns"))}
    trace = result.get("trace")
    return {"summary": summary, "dropped": int(result.get("dropped") or 0),
            "trace": trace if isinstance(trace, str) and re.fullmatch(r"[\w.-]{1,100}", trace) and trace[0] != "." else None,
            "sms": int(result.get("sms") or 0), "clock_mhz": float(result.get("clock_mhz") or 0.0)}


def rung(climb: "Climb") -> RungResult:
    from rungs.ladder.benchmark import bench_entries

    regions = marked_regions(climb.backend, climb.kernel.read_text(errors="replace"))
    if not regions:  # the details say how to mark one: the prompt shows them on a GPU run
        return RungResult(name="sections", status="skip", message=NOT_MARKED,
                          details=HOW_TO_MARK.get(getattr(climb.backend, "name", ""), ""))
    if climb.device != "cuda":
        return RungResult(name="sections", status="skip", message="no GPU",
                          metrics={"marked": regions})
    entries = (climb.job.bench if climb.job else []) or bench_entries(climb.task)
    if not entries:
        return RungResult(name="sections", status="skip", message="the task has no bench shapes")
    profile = climb.result("profile")
    profiled = profile.metrics.get("bench_id") if profile is not None and profile.status == "ok" else None
    # The shape ncu profiled (rungs.ladder.profile.witnessed_entry), so the programs' time is set against ncu's for it
    entry = next((e for e in entries if profiled is not None and e.get("id") == profiled), entries[0])
    result, job_dir = run_target(climb, entry)
    if "error" in result:
        return RungResult(name="sections", status="skip", message=result["error"], metrics={"marked": regions})
    summary = result.get("summary") or {"regions": []}
    if not summary["regions"]:
        return RungResult(name="sections", status="skip", metrics={"marked": regions},
                          message="the instrumented build recorded no region (are the markers inside the kernel?)")
    dest = climb.dumps_dest
    dest.mkdir(parents=True, exist_ok=True)
    shape = pairs(entry["shape"])
    text = f"sections at {shape} (one instrumented call; the timed build has no markers)\n" + table(summary)
    ncu_us = profile.metrics.get("ncu_duration_us") if profiled is not None and profiled == entry.get("id") else None
    occupancy = (profile.metrics.get("achieved_occupancy_pct") if profile is not None else None)
    accounted = accounted_us(summary, result.get("sms", 0), result.get("clock_mhz", 0.0), occupancy or 0.0)
    if accounted is not None and ncu_us:
        text += (f"\nthe programs' time accounts for {accounted:.1f} us of the kernel (at {result['clock_mhz']:.0f} MHz "
                 f"over {result['sms']} SMs, {occupancy:.0f}% occupancy); ncu: {ncu_us:.1f} us "
                 f"({accounted / ncu_us:.2f}x)")
    if result.get("dropped"):
        text += f"\n{result['dropped']} record(s) past the record buffer were dropped: the shares undercount"
    (dest / "sections.txt").write_text(text + "\n")
    (dest / "sections.json").write_text(json.dumps({"shape": shape, **summary}, indent=1))
    trace = job_dir / (result.get("trace") or "-")
    metrics: dict[str, Any] = {"regions": summary["regions"], "covered": summary["covered"],
                               "programs": summary["programs"], "marked": regions, "accounted_us": accounted,
                               "gaps": summary.get("gaps", []),
                               "ncu_us": ncu_us}
    if result.get("trace") and _plain_file(trace, TRACE_MAX_BYTES):
        shutil.copy2(trace, dest / TRACE_FILE)
        metrics["trace"] = str(dest / TRACE_FILE)
        text += f"\ntrace for Perfetto: the first {TRACE_PROGRAMS} programs of each kernel ({TRACE_FILE})"
    return RungResult(name="sections", status="ok", message=headline(summary), details=text, metrics=metrics)
