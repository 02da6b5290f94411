"""The profile rung: Nsight Compute on one timed call of the candidate drawn at random, at one bench shape (the one
timed nearest the roofline), read into a short summary a model can act on, and the outside witness of its time.

ncu runs a worker waiting for its job (`python -m rungs.worker --wait ...`, as every pre-started worker is) whose
`witness` phase is the bench phase's loop on that shape (fresh inputs, the same torch state), with profiling on
(cudaProfilerStart/Stop, `--profile-from-start off`) around the call the parent drew; the worker's own stdout and
stderr go to a file, so ncu's output is ncu's. ncu profiles every kernel of that call (no name filter, at most
MAX_LAUNCHES) with a curated set of sections and the per-reason warp-stall metrics. The `--csv --page details`
output is parsed strictly into, per launch: the limiting unit (memory-, compute- or latency-bound), DRAM and SM
throughput in percent of peak, the top stall reasons, achieved against theoretical occupancy and what limits it,
registers and shared memory per block, and the rules' advice. The CSV is kept as dumps/<run>/<iter>/profile.csv, the
summary as profile.json and profile.txt.

Verdicts (docs/threat-model.md, "What a verdict rests on"): a launch that is not one of the candidate's compiled
kernels (torch's fills and layout copies aside) fails, named; the benchmark's median must agree with ncu's durations
(witness_check); a candidate that dies, hangs or launches nothing under its witness fails. Profiles are cached by the
kernel file, the bench entry, the GPU and the ncu options. No ncu, or counters that may not be read
(ERR_NVGPUCTRPERM, a profiler library that does not load), is a `skip` with the reason, and the verdict warns.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import sys
from glob import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.result import RungResult, headline
from rungs.core.atomic import atomic_write
from rungs.worker.job import JOB_FILE, Job
from rungs.core.fmt import pairs

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "WarpStateStats",
            "LaunchStats")
STALL_METRIC = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")
STALLS = {
    "long_scoreboard": "long scoreboard: waiting on L1TEX (global, local) data",
    "short_scoreboard": "short scoreboard: waiting on shared memory or MUFU results",
    "mio_throttle": "MIO throttle: shared-memory / special-instruction queue full",
    "lg_throttle": "LG throttle: local/global memory queue full",
    "math_pipe_throttle": "math pipe throttle: the execution pipe is busy",
    "barrier": "barrier: waiting for the block's other warps",
    "membar": "memory barrier",
    "wait": "wait: fixed-latency dependency",
    "not_selected": "not selected: eligible but another warp issued",
    "selected": "selected: issuing",
    "no_instruction": "no instruction: instruction cache miss or branch",
    "branch_resolving": "branch resolving",
    "dispatch_stall": "dispatch stall",
    "drain": "drain: waiting for memory stores at exit",
    "imc_miss": "immediate constant cache miss",
    "tex_throttle": "TEX throttle",
    "sleeping": "sleeping",
    "misc": "misc",
}
# How the rules word a stall in their text, for output with no per-reason metrics (such as the recorded files).
STALL_PHRASES = {"scoreboard dependency on a L1TEX": "long_scoreboard", "scoreboard dependency on a MIO": "short_scoreboard",
                 "micro scheduler to select": "not_selected", "MIO": "mio_throttle", "L1 instruction queue": "lg_throttle",
                 "execution pipe": "math_pipe_throttle", "barrier": "barrier", "fixed latency": "wait",
                 "memory barrier": "membar"}
MAX_LAUNCHES = 16
"""Launches of the witnessed call ncu profiles (all kernels, the candidate's or not, in launch order)."""
NCU_TIMEOUT_S = 300.0
LATENCY_BOUND_PCT = 60.0
"""Below this fraction of peak on both memory and SM, a kernel is latency-bound (ncu's own rule uses 60%)."""
NOT_PERMITTED = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded", "Failed to initialize the profiler",
                 "not supported on this device", "Profiling is not supported")


class NcuParseError(ValueError):
    """ncu's output holds no details table that can be read."""


# ---- reading ncu's CSV --------------------------------------------------------------------------------------------
_COLUMNS = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
_UNIT_SCALE = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9,
               "byte/s": 1.0, "Kbyte/s": 1e3, "Mbyte/s": 1e6, "Gbyte/s": 1e9, "Tbyte/s": 1e12}


def _number(text: str) -> float | str | None:
    t = (text or "").strip()
    if not t or t.lower() in ("n/a", "no data"):
        return None
    try:
        return float(t.replace(",", ""))
    except ValueError:
        return t


NCU_MESSAGE = ("==PROF==", "==WARNING==", "==ERROR==", "==INFO==")


def parse_details_csv(text: str, strict: bool = False) -> list[dict[str, Any]]:
    """`ncu --csv --page details` output -> one dict per profiled launch: kernel, block, grid,
    metrics[section][name] = (value, unit), rules = [{section, name, type, text, speedup_type, speedup_pct}].
    Lines before the header (==PROF== messages, the program's own prints) are skipped. `strict` (the witness:
    ncu's own output, which the target cannot write): every line is one of ncu's messages or a CSV row, the
    first CSV row is the header and no other is."""
    lines = text.splitlines()
    if strict:
        stray = next((ln for ln in lines if ln.strip() and not ln.startswith(NCU_MESSAGE) and not ln.startswith('"')),
                     None)
        if stray is not None:
            raise NcuParseError(f"a line that is neither ncu's message nor its table: {stray[:160]}")
        rows = [ln for ln in lines if ln.startswith('"')]
        if not rows or not rows[0].startswith('"ID",') or any(ln.startswith('"ID",') for ln in rows[1:]):
            raise NcuParseError("ncu's table does not start with its one header row")
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        first = next((ln for ln in lines if ln.strip()), "")
        raise NcuParseError("no ncu details table (no CSV header line starting with \"ID\") in the output"
                            + (f"; it begins: {first[:200]}" if first else "; the output is empty"))
    rows = csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"'))))
    header = next(rows)
    missing = [c for c in _COLUMNS if c not in header]
    if missing:
        raise NcuParseError(f"ncu's CSV lacks the column(s) {', '.join(missing)}; header: {', '.join(header)[:300]}")
    col = {name: i for i, name in enumerate(header)}

    def get(row: list[str], name: str) -> str:
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else ""

    launches: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows, start=2):
        if len(row) < len(_COLUMNS):
            raise NcuParseError(f"row {n} of ncu's CSV has {len(row)} fields, expected {len(header)}: {','.join(row)[:200]}")
        launch = launches.setdefault(get(row, "ID"), {
            "id": get(row, "ID"), "kernel": get(row, "Kernel Name"), "block": get(row, "Block Size"),
            "grid": get(row, "Grid Size"), "device": get(row, "Device"), "cc": get(row, "CC"), "metrics": {}, "rules": []})
        section = get(row, "Section Name")
        if get(row, "Rule Name"):
            launch["rules"].append({"section": section, "name": get(row, "Rule Name"), "type": get(row, "Rule Type"),
                                    "text": get(row, "Rule Description"),
                                    "speedup_type": get(row, "Estimated Speedup Type"),
                                    "speedup_pct": _number(get(row, "Estimated Speedup"))})
        elif get(row, "Metric Name"):
            launch["metrics"].setdefault(section, {})[get(row, "Metric Name")] = (
                _number(get(row, "Metric Value")), get(row, "Metric Unit"))
    if not launches:
        raise NcuParseError("ncu's details table has a header but no rows: no kernel was profiled")
    return list(launches.values())


def _metric(launch: dict[str, Any], section: str, name: str) -> Any:
    value = launch["metrics"].get(section, {}).get(name)
    return value[0] if value else None


def _scaled(launch: dict[str, Any], section: str, name: str, to: float) -> float | None:
    value = launch["metrics"].get(section, {}).get(name)
    if not value or not isinstance(value[0], float):
        return None
    return value[0] * _UNIT_SCALE.get(value[1], 1.0) / to


def _stalls(launch: dict[str, Any]) -> list[dict[str, Any]]:
    """Top stall reasons in cycles per issued instruction: from the per-reason metrics when ncu collected them,
    else from the WarpStateStats rules' text (which names the largest ones)."""
    found = []
    for metrics in launch["metrics"].values():
        for name, (value, _) in metrics.items():
            m = STALL_METRIC.fullmatch(name)
            if m and isinstance(value, float) and m.group(1) != "selected":
                found.append({"reason": m.group(1), "cycles": round(value, 2), "what": STALLS.get(m.group(1), m.group(1))})
    if not found:
        for rule in launch["rules"]:
            m = re.search(r"spends ([\d.]+) cycles being stalled (.+?)\.(?:\s|$)", rule["text"])
            if m:
                reason = next((r for phrase, r in STALL_PHRASES.items() if phrase in m.group(2)), "other")
                found.append({"reason": reason, "cycles": float(m.group(1)),
                              "what": STALLS.get(reason, m.group(2)[:120])})
    return sorted(found, key=lambda s: -s["cycles"])[:3]


def _advice(launch: dict[str, Any]) -> list[str]:
    """The rules' advice, one short line each: the Speed Of Light verdict first, then the largest estimated
    speedups; boilerplate left out."""
    out = []
    for rule in sorted(launch["rules"], key=lambda r: (r["section"] != "SpeedOfLight",
                                                       -(r["speedup_pct"] if isinstance(r["speedup_pct"], float) else 0))):
        text = " ".join(rule["text"].split())
        if text.startswith("The optional metric") or text.startswith("Check the Warp Stall Sampling"):
            continue
        sentences = re.split(r"(?<=[.!])\s+(?=[A-Z])", text)
        short = " ".join(sentences[:2])
        short = short if len(short) <= 260 else short[:257] + "..."
        gain = (f" [est. speedup {rule['speedup_pct']:.0f}% {rule['speedup_type']}]"
                if isinstance(rule["speedup_pct"], float) and rule["speedup_pct"] > 0 else "")
        out.append(f"{rule['type']} {rule['name']}: {short}{gain}")
    return out


def summarize_launch(launch: dict[str, Any]) -> dict[str, Any]:
    """The numbers that say what limits one kernel launch."""
    sol = "GPU Speed Of Light Throughput"
    mem, sm = _metric(launch, sol, "Memory Throughput"), _metric(launch, sol, "Compute (SM) Throughput")
    units = {"DRAM": _metric(launch, sol, "DRAM Throughput"), "L2": _metric(launch, sol, "L2 Cache Throughput"),
             "L1/TEX": _metric(launch, sol, "L1/TEX Cache Throughput")}
    mem_f = mem if isinstance(mem, float) else 0.0
    sm_f = sm if isinstance(sm, float) else 0.0
    if max(mem_f, sm_f) < LATENCY_BOUND_PCT:
        bound = "latency-bound"
    else:
        bound = "memory-bound" if mem_f >= sm_f else "compute-bound"
    unit = None
    for rule in launch["rules"]:
        m = re.search(r"Start by analyzing (\S+) in the", rule["text"])
        n = re.search(r"(\S+) is the highest-utilized pipeline \(([\d.]+)%\)", rule["text"])
        if m and bound == "memory-bound":
            unit = m.group(1)
        if n and bound == "compute-bound":
            unit = f"{n.group(1)} pipeline {float(n.group(2)):.0f}%"
    if unit is None:
        if bound == "memory-bound":
            unit = max(((k, v) for k, v in units.items() if isinstance(v, float)), key=lambda kv: kv[1], default=("memory",))[0]
        elif bound == "compute-bound":
            unit = "SM"
    occ = "Occupancy"
    limits = {k.removeprefix("Block Limit "): v for k, (v, _) in launch["metrics"].get(occ, {}).items()
              if k.startswith("Block Limit ") and isinstance(v, float) and v > 0}
    least = min(limits.values(), default=None)
    ls = "Launch Statistics"
    shared = {k: _metric(launch, ls, f"{k.capitalize()} Shared Memory Per Block") for k in ("static", "dynamic", "driver")}
    return {
        "kernel": launch["kernel"], "block": launch["block"], "grid": launch["grid"],
        "duration_us": _scaled(launch, sol, "Duration", 1e3),
        "sm_mhz": _scaled(launch, sol, "SM Frequency", 1e6),  # ncu leaves the clock alone (--clock-control none)
        "bound": bound, "limiting_unit": unit,
        "memory_throughput_pct": mem, "sm_throughput_pct": sm, "dram_throughput_pct": units["DRAM"],
        "l2_throughput_pct": units["L2"], "l1_throughput_pct": units["L1/TEX"],
        "dram_gbps": _scaled(launch, "Memory Workload Analysis", "Memory Throughput", 1e9),
        "cycles_per_issue": _metric(launch, "Warp State Statistics", "Warp Cycles Per Issued Instruction"),
        "stalls": _stalls(launch),
        "theoretical_occupancy_pct": _metric(launch, occ, "Theoretical Occupancy"),
        "achieved_occupancy_pct": _metric(launch, occ, "Achieved Occupancy"),
        "theoretical_warps_per_sm": _metric(launch, occ, "Theoretical Active Warps per SM"),
        "achieved_warps_per_sm": _metric(launch, occ, "Achieved Active Warps Per SM"),
        "occupancy_limited_by": [k.lower() for k, v in limits.items() if v == least],
        "registers_per_thread": _metric(launch, ls, "Registers Per Thread"),
        "shared_per_block_bytes": {k: v for k, v in shared.items() if isinstance(v, float)},
        "waves_per_sm": _metric(launch, ls, "Waves Per SM"),
        "advice": _advice(launch),
    }


def _bytes(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n:.0f} B"


def _pct(v: Any) -> str:
    return f"{v:.0f}%" if isinstance(v, float) else "-"


def summary_line(s: dict[str, Any]) -> str:
    """One line: the verdict of one launch."""
    unit = f" ({s['limiting_unit']})" if s["limiting_unit"] else ""
    dram = f", {s['dram_gbps']:.0f} GB/s" if isinstance(s["dram_gbps"], float) else ""
    stall = f"; top stall {s['stalls'][0]['reason']} {s['stalls'][0]['cycles']:.1f} cyc" if s["stalls"] else ""
    return (f"{s['bound']}{unit}: DRAM {_pct(s['dram_throughput_pct'])} of peak{dram}, SM {_pct(s['sm_throughput_pct'])}"
            f"{stall}; occupancy {_pct(s['achieved_occupancy_pct'])} achieved / {_pct(s['theoretical_occupancy_pct'])} "
            f"theoretical")


def summary_text(summaries: list[dict[str, Any]]) -> str:
    blocks = []
    for s in summaries:
        dur = f", {s['duration_us']:.1f} us" if isinstance(s["duration_us"], float) else ""
        lines = [f"{s['kernel'][:80]}  block {s['block']} grid {s['grid']}{dur}",
                 f"  {summary_line(s)}",
                 f"  throughput % of peak: memory {_pct(s['memory_throughput_pct'])} (DRAM {_pct(s['dram_throughput_pct'])}, "
                 f"L2 {_pct(s['l2_throughput_pct'])}, L1/TEX {_pct(s['l1_throughput_pct'])}), SM {_pct(s['sm_throughput_pct'])}"]
        if s["stalls"]:
            cpi = f"{s['cycles_per_issue']:.1f}" if isinstance(s["cycles_per_issue"], float) else "?"
            lines.append(f"  stalls (cycles per issued instruction, of {cpi}): "
                         + "; ".join(f"{st['what']} {st['cycles']:.1f}" for st in s["stalls"]))
        warps = ""
        if isinstance(s["achieved_warps_per_sm"], float) and isinstance(s["theoretical_warps_per_sm"], float):
            warps = f" ({s['achieved_warps_per_sm']:.0f} / {s['theoretical_warps_per_sm']:.0f} warps per SM)"
        limit = f", limited by {' and '.join(s['occupancy_limited_by'])}" if s["occupancy_limited_by"] else ""
        regs = f"{s['registers_per_thread']:.0f}" if isinstance(s["registers_per_thread"], float) else "?"
        shared = " + ".join(f"{k} {_bytes(v)}" for k, v in s["shared_per_block_bytes"].items() if v)
        waves = f", {s['waves_per_sm']:.2f} waves" if isinstance(s["waves_per_sm"], float) else ""
        lines.append(f"  occupancy {_pct(s['achieved_occupancy_pct'])} achieved / {_pct(s['theoretical_occupancy_pct'])} "
                     f"theoretical{warps}{limit}; {regs} registers/thread, shared {shared or '-'} per block{waves}")
        lines += [f"  - {a}" for a in s["advice"][:5]]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# ---- running ncu -------------------------------------------------------------------------------------------------
def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        hits = sorted(glob(pattern))
        if hits:
            return hits[-1]
    return None


def ncu_options(stall_metrics: bool = True) -> list[str]:
    """Everything but the ncu binary and the program: also the part of the cache key that says how it profiled. No
    kernel-name filter: every kernel the witnessed call launches is profiled, so a foreign one shows (foreign_kernels)."""
    opts = ["--clock-control", "none", "--profile-from-start", "off", "--launch-count", str(MAX_LAUNCHES)]
    for section in SECTIONS:
        opts += ["--section", section]
    if stall_metrics:
        opts += ["--metrics", ",".join(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALLS)]
    return opts + ["--csv", "--page", "details", "--print-units", "base"]


def ncu_problem(output: str) -> str | None:
    """ncu's own error, in one line, or None. Counters it may not read say so first."""
    errors = [ln.strip() for ln in output.splitlines() if ln.startswith("==ERROR==")]
    for marker in NOT_PERMITTED:
        hit = next((ln for ln in errors if marker in ln), None) or (marker if marker in output else None)
        if hit:
            return f"ncu may not read the GPU's performance counters here ({hit.replace('==ERROR== ', '')[:200]})"
    if "No kernels were profiled" in output:
        return "ncu profiled no kernel (no launch of the compiled kernels between cudaProfilerStart and Stop)"
    return errors[0].replace("==ERROR== ", "")[:300] if errors else None


def default_cache() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "kernel-harness" / "ncu"


def cache_key(kernel: Path, entry: dict[str, Any], opts: list[str], gpu: str) -> str:
    h = hashlib.sha256(kernel.read_bytes())
    h.update(json.dumps({"entry": entry, "opts": opts, "gpu": gpu}, sort_keys=True).encode())
    return h.hexdigest()[:24]


WITNESS_LOG = "target.log"
"""Where the witnessed worker's own stdout and stderr go (inside its job folder): never into ncu's output, which is
the witness. An exec wrapper sends them there before Python starts, so the candidate holds no descriptor of ncu's
output (seen on the H200, 2026-12-03, benchmarks/ncu_uid_probe.sh: with ncu's --log-file in a folder the target
could write, the target wrote into it; ncu's own stdout, and its descriptors in /proc, it could not)."""


def witness_job(climb: "Climb", job_dir: Path, entry: dict[str, Any]) -> Job:
    """The worker job ncu runs: the bench phase's loop on `entry`, fresh inputs from a seed of its own, the profiled
    call drawn here (among the timed calls after two warm-up calls), the judged point of a declared config space."""
    import secrets

    from rungs.ladder.judged_build import judged_point, stage
    from rungs.worker.job import WITNESS_CALLS

    kernel, module = stage(climb, job_dir)
    task = climb.task
    call = 3 + secrets.randbelow(WITNESS_CALLS)
    job = Job(kernel=str(kernel), entry=task.entry, dsl=task.dsl,
              worker_module=climb.backend.worker_module if climb.backend else "", device="cuda", phases=["witness"],
              bench=[entry], fresh_seed=secrets.randbelow(1 << 62), prefetch=False, timeout_s=NCU_TIMEOUT_S,
              witness={"bench_id": entry["id"], "call": call, **judged_point(climb)},
              timing=climb.job.timing if climb.job else None, module_init=module)
    (job_dir / JOB_FILE).write_text(job.to_json())
    return job


def run_witness(ncu: str, opts: list[str], job_dir: Path, job: Job, timeout_s: float,
                pinned: dict[str, str] | None = None) -> tuple[str, str | None, bool]:
    """ncu over a worker waiting for its job (`python -m rungs.worker --wait ...`, the argv every pre-started worker
    has), in the sandbox, on the climb's GPU. Returns (ncu's own output, problem or None, whether the problem is the
    candidate's: it died, hung or left the witnessed call unmeasured, as opposed to ncu being unable to run here).
    What the sandbox may read comes from the harness's own job."""
    from rungs.sandbox.pool import READY_FILE, _tail, job_readable, read_phase, run_command, scrub

    out = job_dir.parent / "ncu.out"  # outside the folder the sandbox may write
    target = [sys.executable, "-m", "rungs.worker", "--wait", "cuda", job.worker_module, str(job_dir / READY_FILE)]
    wrapper = ["/bin/sh", "-c", 'exec "$@" >"$0" 2>&1', str(job_dir / WITNESS_LOG)]
    outcome = run_command([ncu, *opts, *wrapper, *target], job_dir, timeout_s, out, readable=job_readable(job),
                          extra_env=pinned, stdin_text=f"{job_dir.resolve()}\n", ready=job_dir / READY_FILE)
    text = scrub(out.read_text(errors="replace")) if out.is_file() else ""
    log = scrub(out.with_suffix(".log").read_text(errors="replace")) if out.with_suffix(".log").is_file() else ""
    phase = read_phase(job_dir / "phase-witness.json")
    problem = ncu_problem(text + "\n" + log)
    if problem and problem.startswith("ncu may not read"):
        return text, problem, False
    if outcome.timed_out:
        return text, f"the candidate did not finish under the witness (Nsight Compute) within {timeout_s:.0f} s", True
    if phase is None or not phase.get("ok"):
        why = (phase or {}).get("error") or outcome.died_in("witness")
        tail = (scrub(_tail(job_dir / WITNESS_LOG, 600)).strip().splitlines() or [""])[-1][:300]
        return text, ("the candidate failed under the witness (Nsight Compute): "
                      + (headline(str(why)) if why else tail or f"exit {outcome.returncode}")), True
    if problem and "profiled no kernel" in problem:
        return text, (f"the witnessed call (timed call {job.witness['call'] if job.witness else '?'}) launched no "
                      "kernel: the timed calls must run the kernels the judged ones did"), True
    if '"ID",' in text:
        return text, None, False
    if problem is None:
        tail = (log or text).strip().splitlines()[-1:] or [""]
        problem = f"ncu exited with code {outcome.returncode} and no details table: {tail[0][:300]}"
    return text, problem, False


# ---- what the witnessed call launched ----------------------------------------------------------------------------
LIBRARY_LAYOUT = re.compile(r"FillFunctor|direct_copy_kernel|CatArrayBatchedCopy")
"""torch kernels a candidate's entry may launch around its own: constant fills (torch.zeros for an accumulator) and
layout copies (.contiguous(), torch.cat), the same aten ops the in-process trace allows. Anything else of torch's,
cuBLAS's or cuDNN's is compute the candidate did not write."""


def kernel_base(name: str) -> str:
    """`void ns::softmax_kernel<128>(float *, int)` -> `softmax_kernel`: the function's own name as ncu prints it."""
    base = name.strip().removeprefix("void ").strip()
    depth, cut = 0, len(base)
    for i, ch in enumerate(base):
        if ch == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = min(cut, i)
            break
    return base[:cut].rsplit("::", 1)[-1].strip()


def unmangled(name: str) -> str:
    """A C++ kernel's Itanium-mangled name (`_Z11gemm_kernelILi128EEvPf`, `_ZN2ns6kernelEPf`) -> its function's own
    name (`gemm_kernel`, `kernel`), as ncu prints it demangled; any other name as it is."""
    if not name.startswith("_Z"):
        return name
    i, last = 2 + (name[2:3] == "N"), name
    while i < len(name) and name[i].isdigit():
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        size = int(name[i:j])
        last, i = name[j:j + size], j + size
    return last


def foreign_kernels(launches: list[dict[str, Any]], names: list[str]) -> list[str]:
    """The launches of the witnessed call that are neither the candidate's compiled kernels (by name) nor torch's
    fills and layout copies: library compute (cuBLAS, cuDNN, aten) the candidate hid behind its own launch."""
    own = {unmangled(n) for n in names}
    foreign = []
    for launch in launches:
        full = launch.get("kernel", "")
        if kernel_base(full) in own or LIBRARY_LAYOUT.search(full):
            continue
        foreign.append(full)
    return foreign


# ---- the outside witness -----------------------------------------------------------------------------------------
WITNESS_MARGIN = {"single": 0.10, "graph": 0.40}
"""How far the benchmark's median may fall under the candidate kernels' durations ncu measured from outside the
candidate's process (one call, at the bench shape profiled), by how it was timed. On the H200 (README, timing fidelity)
kernels over 20 us timed call by call came out within 1% of ncu's gpu__time_duration, never under it by more: 10% is
ten times that gap and carries the noise of ncu's one call. Kernels under 20 us are timed as CUDA-graph replays of
back-to-back calls, and these run faster than one call alone after a flush, as ncu runs it, by an amount that depends
on the kernel, at the same clock: `python3 benchmarks/witness_probe.py` (H200, 2026-12-02, trusted kernels only, ncu
at 1956-1978 MHz) gave graph/ncu 0.719 for the KernelBench LayerNorm solution's Triton kernel at 64 x 4096 (12.07 vs
16.80 us; a cold eval had failed it at the old 25%), 0.852 for torch's layer_norm there, 0.810 and 0.912 for torch's
relu and softmax at 64 x 4096, 1.080 for relu at 4096 x 4096. 40% leaves that worst honest gap (28%) 12 points of
room. What the wider margin gives away is bounded: a lie has at most 40% of a kernel under 20 us to hide in, the
outputs are poisoned before every replay and, after replays drawn at random, one call of the replay (drawn
too) is compared with the first (rungs/worker/timed_calls.TimedCalls), and a time over 100% of the roofline still
needs this witness to agree. A timer that is lied to on a longer kernel (events scaled, work hidden) or a shortcut
taken only while timed shows against the 10%: a softmax skipping 1/8 of its rows when timed is 12.5% under."""


WITNESS_UPPER = 3.0
"""How far the benchmark's median may lie ABOVE ncu's durations for the witnessed call, when ncu saw the whole call
(fewer than MAX_LAUNCHES launches) and the entry is not host-bound: a witnessed call that did a third of the timed
calls' work was not a call like the others."""
GRAPH_UNDER_US = 20.0
"""rungs/timing/measure.TimingConfig.graph_under_us: kernels under this are timed as graph replays (the wider margin)."""


def witness_check(summaries: list[dict[str, Any]], bench: Any, entry: dict[str, Any],
                  graph_under_us: float = GRAPH_UNDER_US) -> dict[str, Any] | None:
    """The benchmark's median at `entry` against the sum of the durations ncu measured for every kernel of one
    witnessed call there. The margin is chosen here from ncu's own figure (under graph_under_us the timing replays
    graphs), never from what the worker says of its timing. Returns the witness (ncu_us, median_us, ratio, margin,
    agrees, message), None without one."""
    durations = [s["duration_us"] for s in summaries if isinstance(s.get("duration_us"), float)]
    shapes = bench.metrics.get("per_shape") or []
    row = next((r for r in shapes if r.get("id") == entry.get("id")), shapes[0] if shapes else None)
    if not durations or row is None or not row.get("runtime_us"):
        return None
    ncu_us = sum(durations)
    clocks = [s["sm_mhz"] for s in summaries if isinstance(s.get("sm_mhz"), float)]
    clock = f", SM clock {min(clocks):.0f} MHz while profiled" if clocks else ""
    median = float(row["runtime_us"])
    mode = "graph" if ncu_us < graph_under_us else "single"
    margin = WITNESS_MARGIN[mode]
    ratio = median / ncu_us if ncu_us > 0 else float("inf")
    label = pairs(row["shape"])
    host_bound = isinstance(row.get("host_us"), (int, float)) and row["host_us"] >= 0.5 * median
    whole = len(durations) < MAX_LAUNCHES
    message = ""
    if ratio < 1.0 - margin:
        message = (f"{label}: the benchmark's median {median:.1f} us is {100 * (1 - ratio):.0f}% under the "
                   f"{ncu_us:.1f} us Nsight Compute measured for a timed call drawn at random, from outside the "
                   f"candidate's process ({len(durations)} launch(es){clock}, margin {margin:.0%} for "
                   f"{'kernels under ' + format(graph_under_us, 'g') + ' us' if mode == 'graph' else 'this length'}): "
                   "the timer was tampered with, or the timed calls skip work that an ordinary call does")
    elif ratio > WITNESS_UPPER and whole and not host_bound:
        message = (f"{label}: the benchmark's median {median:.1f} us is {ratio:.1f}x the {ncu_us:.1f} us Nsight Compute "
                   f"measured for every kernel of a timed call drawn at random ({len(durations)} launch(es)): the "
                   "witnessed call did far less work than the timed ones, so it was not a call like the others")
    return {"ncu_us": round(ncu_us, 3), "median_us": round(median, 3), "ratio": round(ratio, 4), "margin": margin,
            "mode": mode, "launches": len(durations), "bench_id": row.get("id"), "agrees": not message,
            "message": message, "sm_mhz": round(min(clocks), 1) if clocks else None}


# ---- the rung ----------------------------------------------------------------------------------------------------
def _base_name(stem: str) -> str:
    return re.sub(r"\.\d+$", "", stem)


def kernel_filter(compiled: dict[str, Any], renamed: dict[str, list[str]] | None = None) -> list[str] | None:
    """The only names the witnessed call's launches may have (any other is foreign): the device functions' names where
    the backend gives them (a CuTe DSL host function launches `kernel_cutlass_...`, TileLang's `gemm` is
    `gemm_kernel`), else the kernel's own (Triton names the device function after the @triton.jit one). A kernel the
    harness renamed (unnamed_kernel_N: its name is not in the source) counts under the names the worker gave it
    (`renamed`, JobOutcome.renamed): naming a kernel outside the source must not switch the launch check off.
    None where the launches cannot be held to names (no kernel reported, or a renamed one with no name of its own):
    the rung then fails, as the check would be off (ncu profiles every launch between the profile target's
    cudaProfilerStart and Stop either way: the judged entry's call alone)."""
    renamed = renamed or {}
    names: set[str] = set()
    for base in _launch_names(compiled):
        if base.startswith("unnamed_kernel_"):
            claimed = renamed.get(base)
            if not claimed:
                return None
            names.update(_base_name(n) for n in claimed)
        elif base:
            names.add(base)
        else:
            return None
    return sorted(names) or None


def _launch_names(compiled: dict[str, Any]) -> list[str]:
    """Each compiled kernel's device functions' names where the backend gives them, else its own (no `.N`)."""
    return [_base_name(str(f)) for k in compiled.get("kernels", []) for f in (k.get("functions") or [k.get("name", "")])]


def _masked(text: str, renamed: dict[str, list[str]]) -> str:
    """`text` with every name a renamed kernel was given, as claimed and as ncu prints it demangled (whole words),
    replaced by the harness's name for it."""
    for new, claimed in renamed.items():
        for name in sorted({*claimed, *map(unmangled, claimed)}, key=len, reverse=True):
            text = re.sub(rf"\b{re.escape(name)}\b", new, text)
    return text


def shown_names(compiled: dict[str, Any]) -> list[str]:
    """The candidate's kernel names as messages may show them (renamed ones as unnamed_kernel_N)."""
    return sorted(set(_launch_names(compiled)))


def witnessed_entry(task: Any, entries: list[dict[str, Any]], timed: Any) -> dict[str, Any]:
    """The bench entry ncu profiles: the shape timed nearest the measured roofline
    (rungs.ladder.roofline.nearest_ceiling), which is the one the roofline rung needs witnessed; the first bench shape
    where that cannot be said."""
    from rungs.ladder.roofline import nearest_ceiling

    wanted = nearest_ceiling(task, timed)
    return next((e for e in entries if wanted is not None and e.get("id") == wanted), entries[0])


def not_improving(climb: "Climb", timed: RungResult | None) -> str | None:
    """Why a search leaves this candidate unprofiled: its timed runtime does not beat the run's best so far
    (climb.profile_under_us). Nsight Compute's profile and witness hold the GPU alone for 10-20 s a candidate; a search
    spends them on the candidates that could become its best. A time claimed slower than the best gains a candidate
    nothing the witness guards (the best, and every figure a report leads with, stay witnessed)."""
    bar = climb.profile_under_us
    runtime = timed.metrics.get("runtime_us") if timed is not None else None
    if bar is None or not isinstance(runtime, (int, float)) or runtime < bar:
        return None
    return (f"not profiled: {runtime:.1f} us does not beat the run's best so far ({bar:.1f} us), and a search profiles "
            "only the candidates that improve on it (harness run --profile all profiles every one)")


def rung(climb: "Climb") -> RungResult:
    from rungs.ladder.benchmark import bench_entries
    from rungs.ladder.judged_build import judged_point

    entries = (climb.job.bench if climb.job else []) or bench_entries(climb.task)
    if not entries:
        return RungResult(name="profile", status="skip", message="the task has no bench shapes")
    timed = climb.result("benchmark")
    timed = timed if timed is not None and timed.status == "ok" else None
    slower = not_improving(climb, timed)
    if slower:
        return RungResult(name="profile", status="skip", message=slower,
                          metrics={"slower_than_best_us": climb.profile_under_us})
    entry = witnessed_entry(climb.task, entries, timed)
    compiled = climb.compiled or {}
    renamed = climb.outcome.renamed if climb.outcome else {}
    names = kernel_filter(compiled, renamed)
    bench = climb.outcome.phases.get("bench", {}) if climb.outcome else {}
    gpu = next((c.get("gpu", "") for c in bench.get("cases", [])), "")
    opts = ncu_options()
    cache = climb.profile_cache or default_cache()
    key = cache_key(climb.kernel, {**entry, **judged_point(climb)}, opts, gpu)  # the autotuned point: the one judged
    cached = cache / f"{key}.csv"
    if cached.is_file():
        text, from_cache = cached.read_text(errors="replace"), True
    else:
        ncu = find_ncu()
        if ncu is None:
            return RungResult(name="profile", status="skip", message="ncu (Nsight Compute) is not installed")
        job_dir: Path = (climb.job_dir or climb.work_dir / "job") / "profile"
        job = witness_job(climb, job_dir, entry)
        text, problem, theirs = run_witness(ncu, opts, job_dir, job, NCU_TIMEOUT_S, climb.pool.pinned_env())
        if problem and not theirs and "metric" in problem.lower():  # an ncu without some stall metric
            # The first run's candidate had the folder: a fresh folder and job, not what it left there.
            from rungs.sandbox.leftovers import remove_tree

            remove_tree(job_dir)
            job = witness_job(climb, job_dir, entry)
            text, problem, theirs = run_witness(ncu, ncu_options(stall_metrics=False), job_dir, job, NCU_TIMEOUT_S,
                                                climb.pool.pinned_env())
        if problem:
            # A candidate that dies, hangs or launches nothing under its witness is not accepted unwitnessed; an ncu
            # that cannot run on this machine is a skip, said in the verdict.
            return RungResult(name="profile", status="fail" if theirs else "skip", message=problem,
                              details=_masked(text[-4000:], renamed))
        from_cache = False
    try:
        launches = parse_details_csv(text, strict=not from_cache)
    except NcuParseError as exc:
        return RungResult(name="profile", status="fail", details=_masked(text[-4000:], renamed),
                          message=f"Nsight Compute's report of the witnessed call could not be read ({exc}): the "
                                  "witness is void")
    table = "\n".join(ln for ln in text.splitlines()[next(i for i, ln in enumerate(text.splitlines())
                                                         if ln.startswith('"ID",')):] if ln.startswith('"'))
    if names is None:
        return RungResult(name="profile", status="fail", details=_masked(table[-4000:], renamed),
                          message="the compile phase reported no kernel name (or a renamed kernel with no name of its "
                                  "own) to hold the witnessed call's launches to: each launch must be one of the "
                                  "candidate's kernels, named as its source spells them")
    foreign = foreign_kernels(launches, names)
    if foreign:
        return RungResult(name="profile", status="fail", details=_masked(table[-4000:], renamed),
                          message=f"the witnessed call launched {kernel_base(foreign[0])[:120]}, which is not one of the "
                                  f"candidate's compiled kernels ({', '.join(shown_names(compiled)[:4])}): library compute (cuBLAS, "
                                  "cuDNN, aten) is not the candidate's kernel" +
                                  (f" (+{len(foreign) - 1} more foreign launch(es))" if len(foreign) > 1 else ""))
    if not from_cache:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write(cached, table + "\n")
    summaries = [summarize_launch(launch) for launch in launches]
    if renamed:  # what ncu calls a renamed kernel is the worker's claim: shown under the harness's name for it
        table = _masked(table, renamed)
        for summary in summaries:
            summary["kernel"] = _masked(str(summary["kernel"]), renamed)
    dest: Path = climb.dumps_dest
    dest.mkdir(parents=True, exist_ok=True)
    shape = pairs(entry["shape"]) + f" {entry['dtype']}"
    (dest / "profile.csv").write_text(table + "\n")
    (dest / "profile.json").write_text(json.dumps({"shape": shape, "ncu_options": opts, "cached": from_cache,
                                                   "launches": summaries}, indent=1))
    text_summary = f"ncu at {shape}, {len(summaries)} launch(es) of one timed call drawn at random\n\n" \
        + summary_text(summaries)
    (dest / "profile.txt").write_text(text_summary + "\n")
    main = max(summaries, key=lambda s: s["duration_us"] or 0.0)
    metrics = {"bound": main["bound"], "limiting_unit": main["limiting_unit"],
               "dram_throughput_pct": main["dram_throughput_pct"], "sm_throughput_pct": main["sm_throughput_pct"],
               "achieved_occupancy_pct": main["achieved_occupancy_pct"],
               "theoretical_occupancy_pct": main["theoretical_occupancy_pct"], "ncu_duration_us": main["duration_us"],
               "launches": len(summaries), "cached": from_cache, "profile_csv": str(dest / "profile.csv"),
               "kernels_checked": bool(names)}
    more = f" (+{len(summaries) - 1} more launch(es))" if len(summaries) > 1 else ""
    metrics["bench_id"] = entry.get("id")  # the sections rung runs the same shape, to set its time against ncu's
    graph_under = float(((climb.job.timing if climb.job else None) or {}).get("graph_under_us", GRAPH_UNDER_US))
    witness = witness_check(summaries, timed, entry, graph_under) if timed is not None else None
    if witness is not None:
        metrics["witness"] = witness
        timed.metrics["witness"] = witness  # the roofline rung reads it: a time over 100% needs the witness
        if not witness["agrees"]:
            return RungResult(name="profile", status="fail", metrics=metrics, details=text_summary,
                              message=witness["message"])
    return RungResult(name="profile", status="ok", metrics=metrics, details=text_summary,
                      message=f"{main['kernel'][:60]}{more}: {summary_line(main)}" + (" [cached]" if from_cache else ""))
