"""The sections step's arithmetic: per-region totals, means, shares and spread from the region records, in torch.

A flash attention at S=4096 makes about 6.3 million records (4096 programs, 8 warps, three regions per key block):
as Python dicts, a JSON file between processes and a loop over them, that took the H200's sections check past its
limit (2026-12-02). So the instrumented build summarizes its records where they are (rungs/worker/sections_target.py),
with tensor ops, and only the summary and a trace of the first programs leave it.

A track is one warp of one program; its records are its own. A program's span is the mean over its warps of each
warp's first record's start to its last record's end (the warps run side by side); its cycles in a region the mean over
its warps. A region's share is its cycles over all programs' spans; its spread is the slowest program's cycles over
the mean (load imbalance).
"""
from __future__ import annotations

from typing import Any

TRACE_PROGRAMS = 32
"""Programs (of each kernel) the trace for Perfetto keeps: the summary counts every record, the trace only these."""


def summarize_records(program: Any, track: Any, region: Any, start: Any, cycles: Any, names: dict[int, str],
                      kernel_ns: float | None = None) -> dict[str, Any]:
    """The summary of n records given as five 1-D tensors (or sequences) of length n: program and track ids (int,
    a track belongs to one program), region ids (`names` gives their names), start and cycles (float)."""
    import torch

    def col(values: Any, dtype: Any) -> Any:
        return torch.as_tensor(values).to(dtype).reshape(-1)

    program, track, region = (col(v, torch.int64) for v in (program, track, region))
    start = col(start, torch.float64)
    cycles = col(cycles, torch.float64).to(start.device)
    if track.numel() == 0:
        return {"regions": [], "gaps": [], "programs": 0, "program_cycles": 0, "warps_per_program": None, "covered": None,
                "kernel_ns": kernel_ns}
    tracks, of_track = torch.unique(track, return_inverse=True)
    first = torch.full((len(tracks),), float("inf"), dtype=torch.float64, device=start.device)
    last = torch.full_like(first, float("-inf"))
    first = first.scatter_reduce(0, of_track, start, "amin")
    last = last.scatter_reduce(0, of_track, start + cycles, "amax")
    track_program = torch.zeros(len(tracks), dtype=torch.int64, device=start.device).scatter(0, of_track, program)
    programs, program_of_track = torch.unique(track_program, return_inverse=True)
    warps = torch.bincount(program_of_track, minlength=len(programs)).to(torch.float64)
    span = torch.zeros(len(programs), dtype=torch.float64, device=start.device)
    span = span.index_add(0, program_of_track, (last - first) / warps[program_of_track])
    busy = float(span.sum())
    program_of_record = program_of_track[of_track]
    weight = cycles / warps[program_of_record]
    regions = []
    for rid in torch.unique(region).tolist():
        mask = region == rid
        per_program = torch.zeros(len(programs), dtype=torch.float64, device=start.device)
        per_program = per_program.index_add(0, program_of_record[mask], weight[mask])
        present = torch.bincount(program_of_record[mask], minlength=len(programs)) > 0
        values = per_program[present]
        total, mean = float(values.sum()), float(values.mean())
        regions.append({"region": names.get(rid, f"region {rid}"), "total_cycles": round(total),
                        "mean_cycles": round(mean, 1), "share": round(total / busy, 4) if busy > 0 else None,
                        "programs": int(present.sum()),
                        "spread": round(float(values.max()) / mean, 3) if mean > 0 else None})
    regions.sort(key=lambda r: -r["total_cycles"])
    gaps = _gaps(of_track, region, start, cycles, warps[program_of_record], names, busy)
    return {"regions": regions, "gaps": gaps, "programs": len(programs), "program_cycles": round(busy),
            "warps_per_program": round(float(warps.mean()), 2),
            "covered": round(sum(r["total_cycles"] for r in regions) / busy, 4) if busy > 0 else None,
            "kernel_ns": kernel_ns}


def _gaps(of_track: Any, region: Any, start: Any, cycles: Any, warps: Any, names: dict[int, str],
          busy: float) -> list[dict[str, Any]]:
    """The unmarked time inside the programs' spans: per pair of regions a warp ran one after the other, the cycles
    from the end of one to the start of the next (nested or overlapping records count none). Where a region issues an
    asynchronous MMA (Hopper's wgmma), the wait for it comes later: its time shows here, in the gap after it."""
    import torch

    order = torch.sort(start, stable=True).indices
    order = order[torch.sort(of_track[order], stable=True).indices]  # by track, then by start
    t, r, s0, c, w = of_track[order], region[order], start[order], cycles[order], warps[order]
    width = int(region.max()) + 1
    same = t[1:] == t[:-1]
    gap = (s0[1:] - (s0[:-1] + c[:-1])).clamp(min=0) / w[1:]
    pair, gap = (r[:-1] * width + r[1:])[same], gap[same]
    out = []
    for pid in torch.unique(pair).tolist():
        total = float(gap[pair == pid].sum())
        if total <= 0:
            continue
        a, b = divmod(pid, width)
        out.append({"between": f"{names.get(a, f'region {a}')} -> {names.get(b, f'region {b}')}",
                    "total_cycles": round(total), "share": round(total / busy, 4) if busy > 0 else None})
    return sorted(out, key=lambda g: -g["total_cycles"])


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The same from plain events (region, program, track, start, cycles; Proton's also init_ns and end_ns)."""
    ids: dict[str, dict[str, int]] = {"program": {}, "track": {}, "region": {}}
    columns: dict[str, list[Any]] = {"program": [], "track": [], "region": [], "start": [], "cycles": []}
    lifetimes: dict[str, tuple[float, float]] = {}
    for e in events:
        for key in ("program", "track", "region"):
            columns[key].append(ids[key].setdefault(str(e[key]), len(ids[key])))
        columns["start"].append(float(e["start"]))
        columns["cycles"].append(float(e["cycles"]))
        if "init_ns" in e:
            lifetimes[str(e["program"])] = (e["init_ns"], e["end_ns"])
    kernel_ns = (max(b for _, b in lifetimes.values()) - min(a for a, _ in lifetimes.values())) if lifetimes else None
    names = {i: n for n, i in ids["region"].items()}
    return summarize_records(columns["program"], columns["track"], columns["region"], columns["start"],
                             columns["cycles"], names, kernel_ns)


def accounted_us(summary: dict[str, Any], sms: int, clock_mhz: float, occupancy_pct: float) -> float | None:
    """The kernel time the programs' spans account for: their cycles at the SM clock, spread over the SMs, with as
    many programs side by side on an SM as the occupancy holds (64 warps an SM on Hopper). Next to ncu's duration it
    says whether the shares are shares of the kernel's real time (the check of the sections step on the H200)."""
    warps = summary.get("warps_per_program")
    if not (warps and sms and clock_mhz and occupancy_pct and summary.get("program_cycles")):
        return None
    side_by_side = max(1.0, occupancy_pct / 100 * 64 / warps)
    return summary["program_cycles"] / clock_mhz / (sms * side_by_side)
