"""Reading SASS: instruction counts by family, resources, and a short verdict on what stands out in a kernel.

The families are the ones a kernel engineer looks for first: matrix instructions (HGMMA/QGMMA on Hopper,
HMMA on older paths) against plain FFMA, the width of global loads and stores, local-memory traffic
(LDL/STL: spills or a register array indexed at run time), async copies (LDGSTS, UTMALDG/TMA), barriers.
Resources come from `cuobjdump --dump-resource-usage` (registers, stack) and from Triton's own metadata
(`<kernel>.json` beside the cubin, written by the worker): the launch's warps and stages, the constexprs, and
the dynamic shared memory, which the cubin's resource table does not show.
"""
from __future__ import annotations

import math
import re
from rungs.fmt import pairs
from collections import Counter
from typing import Any

_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
_RESOURCE = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")

FAMILIES = {
    "HGMMA": "warpgroup matrix (Hopper wgmma, 16-bit)",
    "QGMMA": "warpgroup matrix (Hopper wgmma, fp8)",
    "IGMMA": "warpgroup matrix (Hopper wgmma, int8)",
    "HMMA": "warp matrix (mma.sync)",
    "IMMA": "warp matrix, integer (mma.sync)",
    "FFMA": "fp32 fused multiply-add",
    "MUFU": "special function (exp2, rcp, ...)",
    "LDG": "global load",
    "STG": "global store",
    "LDS": "shared load",
    "STS": "shared store",
    "LDSM": "shared load to matrix fragments (ldmatrix)",
    "LDL": "local-memory load (spill?)",
    "STL": "local-memory store (spill?)",
    "LDGSTS": "async global->shared copy (cp.async)",
    "UTMALDG": "TMA bulk tensor load",
    "UTMASTG": "TMA bulk tensor store",
    "BAR": "barrier",
    "SYNCS": "mbarrier operations",
    "SHFL": "warp shuffle",
    "REDG": "global reduction",
    "ATOMG": "global atomic",
}
MATRIX = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "IMMA")
WIDTH_FAMILIES = ("LDG", "STG", "LDGSTS", "LDS", "STS")

# sm_90 (H100/H200) limits, for the occupancy bound: what the resources alone allow, before any measurement.
SM90 = {"regs_per_sm": 65536, "smsp_per_sm": 4, "reg_unit": 256, "max_warps": 64, "max_blocks": 32,
        "smem_per_sm": 233472, "smem_reserved_per_block": 1024}


def count_instructions(sass: str) -> Counter[str]:
    return Counter(m.group(1) for m in _INSN.finditer(sass))


def resources(usage_text: str) -> dict[str, dict[str, int]]:
    """Parse `cuobjdump --dump-resource-usage`: registers, stack, shared and local bytes per function."""
    return {m.group(1): {"registers": int(m.group(2)), "stack": int(m.group(3)), "shared": int(m.group(4)),
                         "local": int(m.group(5))} for m in _RESOURCE.finditer(usage_text)}


def _width(op: str) -> int:
    """Bytes per thread of a load/store mnemonic: LDG.E.128 -> 16, LDG.E -> 4, LDG.E.64 -> 8, .U16 -> 2."""
    for bits, nbytes in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if bits in op:
            return nbytes
    return 4


def occupancy_bound(registers: int, warps: int | None, shared_bytes: int) -> dict[str, Any] | None:
    """Blocks and warps one SM can hold given registers, shared memory and warps per block (sm_90 limits), and
    what limits it: the same arithmetic as Nsight Compute's 'Block Limit' rows."""
    if not warps:
        return None
    hw = SM90
    per_warp = math.ceil(max(registers, 1) * 32 / hw["reg_unit"]) * hw["reg_unit"]
    limits = {
        "registers": (hw["regs_per_sm"] // hw["smsp_per_sm"] // per_warp) * hw["smsp_per_sm"] // warps,
        "shared memory": hw["smem_per_sm"] // (shared_bytes + hw["smem_reserved_per_block"]),
        "warps": hw["max_warps"] // warps,
        "blocks": hw["max_blocks"],
    }
    blocks = min(limits.values())
    limited_by = [k for k, v in limits.items() if v == blocks and k != "blocks"] or ["blocks"]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy_pct": round(100 * blocks * warps / hw["max_warps"], 1), "limited_by": limited_by}


def summarize_kernel(name: str, sass: str, usage: dict[str, int] | None = None,
                     meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """One kernel's summary: resources, instruction families, matrix shapes, memory widths, and a verdict."""
    ops = count_instructions(sass)
    families: Counter[str] = Counter()
    widths: dict[str, Counter[int]] = {f: Counter() for f in WIDTH_FAMILIES}
    matrix: Counter[str] = Counter()
    for op, n in ops.items():
        base = op.split(".")[0]
        if base in FAMILIES:
            families[base] += n
        if base in widths:
            widths[base][_width(op)] += n
        if base in MATRIX:
            matrix[op] += n
    usage = usage or {}
    meta = meta or {}
    local_traffic = families["LDL"] + families["STL"]
    static_shared = usage.get("shared", 0)
    dynamic_shared = int(meta.get("shared") or 0)
    warps = meta.get("num_warps")
    summary: dict[str, Any] = {
        "kernel": name, "instructions": sum(ops.values()), "registers": usage.get("registers", 0),
        "stack_bytes": usage.get("stack", 0), "spill_bytes": usage.get("stack", 0) if local_traffic else 0,
        "shared_static_bytes": static_shared, "shared_dynamic_bytes": dynamic_shared,
        "shared_bytes": static_shared + dynamic_shared,
        "num_warps": warps, "num_stages": meta.get("num_stages"), "constexprs": meta.get("constexprs", {}),
        "specialized": meta.get("specialized", {}), "shapes": meta.get("shapes", []),
        "families": dict(families), "matrix": dict(matrix),
        **{f"{f.lower()}_bytes": dict(widths[f]) for f in WIDTH_FAMILIES},
    }
    summary["occupancy"] = occupancy_bound(summary["registers"], warps, max(dynamic_shared, 0) +
                                           max(static_shared - SM90["smem_reserved_per_block"], 0))
    summary["verdict"] = verdict(summary)
    return summary


def verdict(s: dict[str, Any]) -> str:
    f = s["families"]
    notes = []
    gmma = [k for k in ("HGMMA", "QGMMA", "IGMMA") if f.get(k)]
    if gmma:
        notes.append("uses Hopper wgmma (" + ", ".join(gmma) + ")")
    elif f.get("HMMA") or f.get("IMMA"):
        notes.append("matrix work on mma.sync (HMMA), not Hopper's wgmma: slower path")
    elif f.get("FFMA", 0) > 64:
        notes.append("no matrix instructions: arithmetic on plain FFMA")
    if f.get("LDL") or f.get("STL"):
        what = f"register spills, {s['spill_bytes']} B of stack" if s["spill_bytes"] else "a run-time-indexed array?"
        notes.append(f"local memory: {f.get('LDL', 0)} LDL / {f.get('STL', 0)} STL ({what})")
    ldg = s["ldg_bytes"]
    narrow = sum(n for w, n in ldg.items() if w < 16)
    if ldg and narrow and not ldg.get(16):
        notes.append(f"global loads <= {max(ldg)} B per thread, no 16 B vectors (unaligned at this shape, or a layout "
                     "that does not vectorize)")
    if f.get("UTMALDG"):
        notes.append("TMA loads")
    elif f.get("LDGSTS"):
        notes.append("cp.async loads")
    elif gmma:
        notes.append("wgmma operands via LDG -> STS: no cp.async or TMA pipeline")
    occ = s.get("occupancy")
    if s["registers"] >= 200 and not gmma:
        notes.append(f"{s['registers']} registers per thread: occupancy is register-limited")
    if occ and occ["warps_per_sm"] < (8 if gmma else 16):  # a wgmma kernel is built for few, large blocks
        notes.append(f"at most {occ['blocks_per_sm']} block(s) = {occ['warps_per_sm']} warps per SM, limited by "
                     + " and ".join(occ["limited_by"]))
    return "; ".join(notes) or "nothing stands out"


# ---- text -----------------------------------------------------------------------------------------------------
def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def _widths(counts: dict[Any, int]) -> str:
    return " ".join(f"{n}x{w}B" for w, n in sorted(counts.items(), key=lambda kv: int(kv[0]))) or "-"


def kernel_block(s: dict[str, Any]) -> str:
    """A few lines a person and a model can read: what the compiler made of one specialization."""
    head = s["kernel"]
    consts = pairs(s["constexprs"])
    launch = ", ".join(x for x in (f"{s['num_warps']} warps" if s["num_warps"] else "",
                                   f"{s['num_stages']} stages" if s["num_stages"] else "") if x)
    if consts or launch:
        head += "  [" + "; ".join(x for x in (consts, launch) if x) + "]"
    lines = [head]
    if s.get("specialized"):
        lines.append("  specialized on: " + pairs(s["specialized"]))
    tested = [sh for sh in s["shapes"] if "bench" not in sh]
    timed = [{k: v for k, v in sh.items() if k != "bench"} for sh in s["shapes"] if "bench" in sh]
    if tested:
        lines.append("  compiled for: " + "; ".join(pairs(sh) for sh in tested[:4])
                     + (" ..." if len(tested) > 4 else ""))
    if timed:  # the compile phase's build at the bench shapes: the specialization that is timed
        lines.append("  timed at (bench): " + "; ".join(pairs(sh) for sh in timed))
    spills = (f"{_kb(s['spill_bytes'])} spilled" if s["spill_bytes"] else
              f"no spills (stack {_kb(s['stack_bytes'])})" if s["stack_bytes"] else "no spills")
    shared = f"shared {_kb(s['shared_dynamic_bytes'])} dynamic + {_kb(s['shared_static_bytes'])} static per block"
    occ = s["occupancy"]
    occ_text = (f"; occupancy bound {occ['blocks_per_sm']} block(s) = {occ['warps_per_sm']} warps/SM "
                f"({occ['occupancy_pct']:.0f}%, by {' and '.join(occ['limited_by'])})") if occ else ""
    lines.append(f"  registers {s['registers']}, {spills}, {shared}{occ_text}")
    f = s["families"]
    mma = ", ".join(f"{op} x{n}" for op, n in sorted(s["matrix"].items())) or "none"
    lines.append(f"  matrix: {mma}; FFMA {f.get('FFMA', 0)}, MUFU {f.get('MUFU', 0)}; {s['instructions']} instructions")
    lines.append(f"  global: LDG {_widths(s['ldg_bytes'])} | STG {_widths(s['stg_bytes'])} | "
                 f"async LDGSTS {_widths(s['ldgsts_bytes'])}, TMA {f.get('UTMALDG', 0)} loads/{f.get('UTMASTG', 0)} stores")
    lines.append(f"  shared: LDS {_widths(s['lds_bytes'])} | STS {_widths(s['sts_bytes'])} | LDSM {f.get('LDSM', 0)}; "
                 f"local LDL {f.get('LDL', 0)} STL {f.get('STL', 0)}; barriers BAR {f.get('BAR', 0)}, "
                 f"mbarrier {f.get('SYNCS', 0)}")
    lines.append(f"  => {s['verdict']}")
    return "\n".join(lines)


def summary_table(summaries: list[dict[str, Any]]) -> str:
    return "\n\n".join(kernel_block(s) for s in summaries)


def rollup(summaries: list[dict[str, Any]]) -> str:
    """One line over all kernels, for the rung's message: matrix instructions, spills, async copies, registers."""
    n = len(summaries)
    parts = [f"{n} kernel(s)"]
    for fam in MATRIX + ("LDGSTS", "UTMALDG"):
        have = sum(1 for s in summaries if s["families"].get(fam))
        if have:
            parts.append(f"{fam} in {have}/{n}")
    if not any(s["matrix"] for s in summaries):
        parts.append("no matrix instructions")
    spilled = [s for s in summaries if s["spill_bytes"]]
    if spilled:
        parts.append("spills in " + ", ".join(f"{s['kernel']} ({s['spill_bytes']} B)" for s in spilled))
    narrow = [s["kernel"] for s in summaries if s["ldg_bytes"] and not s["ldg_bytes"].get(16)]
    if narrow:
        parts.append(f"no 16 B global loads in {len(narrow)}/{n}")
    parts.append(f"registers up to {max(s['registers'] for s in summaries)}")
    return "; ".join(parts) + " (each kernel's verdict in the details)"


# ---- change since the previous iteration ------------------------------------------------------------------------
def _diff_fields(s: dict[str, Any]) -> dict[str, Any]:
    """The numbers worth comparing between two versions of a kernel, with readable names."""
    occ = s.get("occupancy") or {}
    out: dict[str, Any] = {"registers": s.get("registers"), "spill_bytes": s.get("spill_bytes"),
                           "shared_bytes": s.get("shared_bytes"), "warps": s.get("num_warps"),
                           "stages": s.get("num_stages"), "warps/SM bound": occ.get("warps_per_sm"),
                           "instructions": s.get("instructions")}
    fam = s.get("families", {})
    for k in ("HGMMA", "QGMMA", "HMMA", "FFMA", "LDGSTS", "UTMALDG", "LDL", "STL", "BAR"):
        out[k] = fam.get(k, 0)
    for k in ("ldg_bytes", "stg_bytes"):
        out[k.split("_")[0].upper() + " widths"] = _widths(s.get(k, {}))
    for k, v in (s.get("constexprs") or {}).items():
        out[k] = v
    return out


def summary_diff(before: list[dict[str, Any]] | str, after: list[dict[str, Any]] | str) -> str:
    """Per kernel, what changed: `matmul_kernel: registers 128 -> 190, HGMMA 0 -> 4`. Kernels are matched by
    name. Text summaries (an older dumps folder) fall back to a line diff."""
    if isinstance(before, str) or isinstance(after, str):
        import difflib

        a = before if isinstance(before, str) else summary_table(before)
        b = after if isinstance(after, str) else summary_table(after)
        diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "previous", "this", lineterm="", n=0))
        return "\n".join(diff[2:]) if diff else "(no change)"
    old = {s["kernel"]: s for s in before}
    new = {s["kernel"]: s for s in after}
    lines = []
    for name, s in new.items():
        if name not in old:
            lines.append(f"{name}: new kernel ({s['registers']} registers, {s['verdict']})")
            continue
        a, b = _diff_fields(old[name]), _diff_fields(s)
        changes = [f"{k} {a.get(k, '-')} -> {v}" for k, v in b.items() if a.get(k) != v]
        changes += [f"{k} {v} -> -" for k, v in a.items() if k not in b]
        lines.append(f"{name}: " + (", ".join(changes) if changes else "no change"))
    lines += [f"{name}: gone" for name in old if name not in new]
    return "\n".join(lines) or "(no kernels)"
