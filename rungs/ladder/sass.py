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
from rungs.core.fmt import pairs
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
    "UBLKCP": "bulk async copy (cp.async.bulk)",
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
        "unaligned_args": meta.get("not_16_aligned"), "precision": None, "role": "only",
    }
    summary["occupancy"] = occupancy_bound(summary["registers"], warps, max(dynamic_shared, 0) +
                                           max(static_shared - SM90["smem_reserved_per_block"], 0))
    summary["verdict"] = verdict(summary)
    return summary


def loads(s: dict[str, Any]) -> tuple[int, int, int]:
    """Global loads of every kind: (16-byte ones: LDG.128, LDGSTS.128, TMA and bulk copies; narrower ones; the widest
    of the narrower, in bytes)."""
    f = s["families"]
    counts: dict[int, int] = {}
    for key in ("ldg_bytes", "ldgsts_bytes"):
        for w, n in (s.get(key) or {}).items():
            counts[int(w)] = counts.get(int(w), 0) + n
    narrow = {w: n for w, n in counts.items() if w < 16}
    wide = counts.get(16, 0) + f.get("UTMALDG", 0) + f.get("UBLKCP", 0)
    return wide, sum(narrow.values()), max(narrow, default=0)


def narrow_loads(s: dict[str, Any]) -> str | None:
    """Why a kernel loads nothing 16 bytes wide, where it does not: the shape rules it out (an argument Triton could
    not specialize as a multiple of 16), or the layout does."""
    wide, narrow, widest = loads(s)
    if wide or not narrow:
        return None
    head = f"global loads <= {widest} B per thread, none 16 B (LDG, LDGSTS, TMA)"
    unaligned = s.get("unaligned_args")
    if unaligned:
        what = "is not a multiple" if len(unaligned) == 1 else "are not multiples"
        return (f"{head}: at this shape {', '.join(unaligned)} {what} of 16, so Triton cannot prove 16-byte "
                "alignment (the shape's doing, not the kernel's)")
    if unaligned is None:
        return f"{head} (unaligned at this shape, or a layout that does not vectorize)"
    return (f"{head}, though every pointer and integer argument is a multiple of 16 here: a layout that does not "
            "vectorize (the contiguous axis not the block's fastest-varying one, or a mask along it)")


def verdict(s: dict[str, Any]) -> str:
    """What stands out. A build for the test shapes only, beside builds at the bench shapes (role "test"), is not
    the one timed: its speed notes (load widths, occupancy) are left to the timed build's verdict."""
    f = s["families"]
    timed = s.get("role") != "test"
    notes = []
    precision = s.get("precision")
    if precision and precision["breaks"]:
        notes.append("precision: " + precision["short"])
    gmma = [k for k in ("HGMMA", "QGMMA", "IGMMA") if f.get(k)]
    if gmma:
        notes.append("uses Hopper wgmma (" + ", ".join(gmma) + ")")
    elif f.get("HMMA") or f.get("IMMA"):
        notes.append("matrix work on mma.sync (HMMA), not Hopper's wgmma: slower path")
    elif f.get("FFMA", 0) > 64:
        exact = precision and not precision["breaks"] and "ieee" in precision["short"]
        notes.append("no matrix instructions: arithmetic on plain FFMA"
                     + (f" ({precision['short']})" if exact else ""))
    if f.get("LDL") or f.get("STL"):
        what = f"register spills, {s['spill_bytes']} B of stack" if s["spill_bytes"] else "a run-time-indexed array?"
        notes.append(f"local memory: {f.get('LDL', 0)} LDL / {f.get('STL', 0)} STL ({what})")
    narrow = narrow_loads(s) if timed else None
    if narrow:
        notes.append(narrow)
    if f.get("UTMALDG"):
        notes.append("TMA loads")
    elif f.get("LDGSTS"):
        notes.append("cp.async loads")
    elif gmma:
        notes.append("wgmma operands via LDG -> STS: no cp.async or TMA pipeline")
    occ = s.get("occupancy")
    if timed and s["registers"] >= 200 and not gmma:
        notes.append(f"{s['registers']} registers per thread: occupancy is register-limited")
    if timed and occ and occ["warps_per_sm"] < (8 if gmma else 16):  # a wgmma kernel is built for few, large blocks
        notes.append(f"at most {occ['blocks_per_sm']} block(s) = {occ['warps_per_sm']} warps per SM, limited by "
                     + " and ".join(occ["limited_by"]))
    return "; ".join(notes) or "nothing stands out"


def finish(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summaries specialized at the bench shapes: where the compile phase built some at the bench shapes (the
    builds that are timed), those come first and lead the verdicts; the builds that served test shapes only are
    marked role "test" and speak of precision and spills, not speed. Without any bench build every one is role
    "only". Returns them in that order, verdicts recomputed."""
    any_timed = any(_timed(s) for s in summaries)
    for s in summaries:
        s["role"] = ("timed" if _timed(s) else "test") if any_timed else "only"
        s["verdict"] = verdict(s)
    return sorted(summaries, key=lambda s: s["role"] == "test")


def _timed(s: dict[str, Any]) -> bool:
    return any("bench" in sh for sh in s.get("shapes") or [])


# ---- text -----------------------------------------------------------------------------------------------------
def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def _widths(counts: dict[Any, int]) -> str:
    return " ".join(f"{n}x{w}B" for w, n in sorted(counts.items(), key=lambda kv: int(kv[0]))) or "-"


def kernel_block(s: dict[str, Any], said: dict[str, str] | None = None) -> str:
    """A few lines a person and a model can read: what the compiler made of one specialization. `said`: precision
    texts already shown by an earlier block of the same table (text -> that kernel), not repeated."""
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
    listed = "; ".join(pairs(sh) for sh in tested[:4]) + (" ..." if len(tested) > 4 else "")
    if timed:  # the compile phase's build at the bench shapes: the specialization that is timed
        lines.append("  timed at (bench): " + "; ".join(pairs(sh) for sh in timed))
        if tested:
            lines.append("  also compiled for (test): " + listed)
    elif tested and s.get("role") == "test":
        lines.append("  compiled for the test shapes only, not timed (the timed builds come first): " + listed)
    elif tested:
        lines.append("  compiled for: " + listed)
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
    if s.get("precision"):
        text = s["precision"]["text"]
        earlier = (said or {}).get(text)
        lines.append(f"  precision: the same as {earlier}'s" if earlier else f"  precision: {text}")
        if said is not None:
            said.setdefault(text, s["kernel"])
    bulk = f", bulk copies {f['UBLKCP']}" if f.get("UBLKCP") else ""
    lines.append(f"  global: LDG {_widths(s['ldg_bytes'])} | STG {_widths(s['stg_bytes'])} | "
                 f"async LDGSTS {_widths(s['ldgsts_bytes'])}, TMA {f.get('UTMALDG', 0)} loads/{f.get('UTMASTG', 0)} stores"
                 f"{bulk}")
    lines.append(f"  shared: LDS {_widths(s['lds_bytes'])} | STS {_widths(s['sts_bytes'])} | LDSM {f.get('LDSM', 0)}; "
                 f"local LDL {f.get('LDL', 0)} STL {f.get('STL', 0)}; barriers BAR {f.get('BAR', 0)}, "
                 f"mbarrier {f.get('SYNCS', 0)}")
    lines.append(f"  => {s['verdict']}")
    return "\n".join(lines)


def summary_table(summaries: list[dict[str, Any]]) -> str:
    said: dict[str, str] = {}
    return "\n\n".join(kernel_block(s, said) for s in summaries)


def rollup(summaries: list[dict[str, Any]]) -> str:
    """One line over all kernels, for the rung's message: precision findings (every build: they decide correctness),
    then, over the builds at the bench shapes where there are any (the timed ones), matrix instructions, spills, load
    widths and registers."""
    n = len(summaries)
    timed = [s for s in summaries if s.get("role") == "timed"]
    focus = timed or summaries
    k = len(focus)
    parts = [f"{n} kernel build(s), {k} at the bench shapes (the rest for test shapes only)" if timed and k < n
             else f"{n} kernel(s)" + (", at the bench shapes" if timed else "")]
    broken = [s for s in summaries if (s.get("precision") or {}).get("breaks")]
    if broken:
        parts.append(f"precision: {broken[0]['precision']['short']} in {len(broken)}/{n}")
    for fam in MATRIX + ("LDGSTS", "UTMALDG"):
        have = sum(1 for s in focus if s["families"].get(fam))
        if have:
            parts.append(f"{fam} in {have}/{k}")
    if not any(s["matrix"] for s in focus):
        parts.append("no matrix instructions")
    spilled = [s for s in focus if s["spill_bytes"]]
    if spilled:
        parts.append("spills in " + ", ".join(f"{s['kernel']} ({s['spill_bytes']} B)" for s in spilled))
    narrow = [s for s in focus if narrow_loads(s)]
    layout = [s for s in narrow if not s.get("unaligned_args")]
    if layout:
        parts.append(f"no 16 B global loads in {len(layout)}/{k}")
    if len(narrow) > len(layout):
        parts.append(f"16 B loads ruled out by the shape in {len(narrow) - len(layout)}/{k}")
    parts.append(f"registers up to {max(s['registers'] for s in focus)}")
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
