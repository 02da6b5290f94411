"""Reading SASS: instruction counts by family, and a short verdict on what stands out in a kernel.

The families are the ones a kernel engineer looks for first: matrix instructions (HGMMA/QGMMA on Hopper,
HMMA on older paths) against plain FFMA, the width of global loads and stores, local-memory traffic
(LDL/STL: spills or a register array indexed at run time), async copies (LDGSTS, UTMALDG/TMA), barriers.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_RESOURCE = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")

FAMILIES = {
    "HGMMA": "warpgroup matrix (Hopper wgmma, 16-bit)",
    "QGMMA": "warpgroup matrix (Hopper wgmma, fp8)",
    "IGMMA": "warpgroup matrix (Hopper wgmma, int8)",
    "HMMA": "warp matrix (mma.sync)",
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


def summarize_kernel(name: str, sass: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    ops = count_instructions(sass)
    families: Counter[str] = Counter()
    widths: dict[str, Counter[int]] = {"LDG": Counter(), "STG": Counter()}
    for op, n in ops.items():
        base = op.split(".")[0]
        if base in FAMILIES:
            families[base] += n
        if base in widths:
            widths[base][_width(op)] += n
    usage = usage or {}
    spill = usage.get("stack", 0) if families["LDL"] or families["STL"] else 0
    summary: dict[str, Any] = {
        "kernel": name, "instructions": sum(ops.values()), "registers": usage.get("registers", 0),
        "shared_bytes": usage.get("shared", 0), "stack_bytes": usage.get("stack", 0), "spill_bytes": spill,
        "families": dict(families), "ldg_bytes": dict(widths["LDG"]), "stg_bytes": dict(widths["STG"]),
    }
    summary["verdict"] = verdict(summary)
    return summary


def verdict(s: dict[str, Any]) -> str:
    f = s["families"]
    notes = []
    if f.get("HGMMA") or f.get("QGMMA") or f.get("IGMMA"):
        notes.append("uses Hopper wgmma (" + ", ".join(k for k in ("HGMMA", "QGMMA", "IGMMA") if f.get(k)) + ")")
    elif f.get("HMMA"):
        notes.append("matrix work on mma.sync (HMMA), not Hopper's wgmma: slower path")
    elif f.get("FFMA", 0) > 64:
        notes.append("no matrix instructions: arithmetic on plain FFMA")
    if f.get("LDL") or f.get("STL"):
        notes.append(f"local-memory traffic ({f.get('LDL', 0)} LDL, {f.get('STL', 0)} STL): spills or a run-time-indexed array")
    narrow = sum(n for w, n in s["ldg_bytes"].items() if w < 16)
    if s["ldg_bytes"] and narrow and not s["ldg_bytes"].get(16):
        notes.append("global loads are narrower than 16 bytes per thread")
    if f.get("UTMALDG"):
        notes.append("TMA loads")
    elif f.get("LDGSTS"):
        notes.append("cp.async loads")
    if s["registers"] >= 200:
        notes.append(f"{s['registers']} registers per thread: occupancy is register-limited")
    return "; ".join(notes) or "nothing stands out"


def summary_table(summaries: list[dict[str, Any]]) -> str:
    lines = [f"{'kernel':<28} {'regs':>4} {'smem_B':>7} {'stack_B':>7} {'insns':>6}  families / load widths / verdict"]
    for s in summaries:
        fam = " ".join(f"{k}:{v}" for k, v in sorted(s["families"].items()))
        ldg = " ".join(f"{w}B:{n}" for w, n in sorted(s["ldg_bytes"].items()))
        stg = " ".join(f"{w}B:{n}" for w, n in sorted(s["stg_bytes"].items()))
        lines.append(f"{s['kernel'][:28]:<28} {s['registers']:>4} {s['shared_bytes']:>7} {s['stack_bytes']:>7} "
                     f"{s['instructions']:>6}  {fam}")
        lines.append(f"{'':<57}LDG {ldg or '-'} | STG {stg or '-'}")
        lines.append(f"{'':<57}=> {s['verdict']}")
    return "\n".join(lines)


def summary_diff(before: str, after: str) -> str:
    import difflib

    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), "previous", "this", lineterm="", n=0))
    return "\n".join(diff[2:]) if diff else "(no change)"
