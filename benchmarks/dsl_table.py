"""The three workloads in the four DSLs, one table (issue 22): each fast demo's `harness check --json` verdict
(the bench rung's median per bench shape, its rate, the roofline fraction) next to the libraries torch calls for
the same work, timed here by the bench rung's own timing code on the same inputs: cuBLAS (torch.matmul),
cuDNN's attention (scaled_dot_product_attention under the cuDNN backend; flash-attention's where cuDNN refuses)
and torch.softmax.

    python3 benchmarks/dsl_table.py DIR [DIR...]      # on the GPU machine; DIR holds <demo>.json verdicts

benchmarks/gpu_session.sh writes those verdicts (`harness check TASK DEMO --json`) and runs this last.
Without a GPU the library column says "no GPU" and the table is still printed from the verdicts.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rungs.core.fmt import pairs as label  # noqa: E402 - after the path is set

WORKLOADS = ("softmax", "gemm", "flash_attn")
DSLS = {"": "Triton", "cute": "CuTe DSL", "cuda": "CUDA C++", "tilelang": "TileLang"}
LIBRARY = {"softmax": "torch.softmax", "gemm": "cuBLAS", "flash_attn": "cuDNN SDPA"}


def split(stem: str) -> tuple[str, str] | None:
    """flash_attn_cute_4_fast -> (flash_attn, cute); gemm_4_grouped -> (gemm, '')."""
    for w in WORKLOADS:
        if stem.startswith(w + "_"):
            rest = stem[len(w) + 1:].split("_")[0]
            return w, rest if rest in DSLS else ""
    return None


def _rank(v: dict[str, Any]) -> tuple[int, float]:
    """A verdict's place among its DSL's: timed passes first, fastest first (their median over the bench shapes)."""
    us = rung(v, "benchmark").get("runtime_us")
    timed = v.get("verdict") == "pass" and isinstance(us, (int, float))
    return (0, float(us)) if timed else (1, 0.0)


def verdicts(dirs: list[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (workload, DSL)'s best verdict in the folders: where a DSL has several demos checked (a phase checks each
    DSL's current best, an older session its earlier ones), its fastest timed pass, else the first in name order."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for d in dirs:
        for f in sorted(d.glob("*.json")):
            key = split(f.stem)
            if key is None:
                continue
            try:
                v = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                v = {"verdict": "no verdict", "failed_rung": None, "rungs": []}
            v["demo"] = f.stem
            if key not in found or _rank(v) < _rank(found[key]):
                found[key] = v
    return found


def rung(v: dict[str, Any], name: str) -> dict[str, Any]:
    return next((r.get("metrics") or {} for r in v.get("rungs", []) if r["name"] == name), {})


def library_fn(workload: str) -> Any:
    import torch

    if workload == "softmax":
        return lambda x: torch.softmax(x, dim=-1)
    if workload == "gemm":
        return torch.matmul

    def sdpa(q: Any, k: Any, v: Any, causal: bool) -> Any:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
    return sdpa


def library_times(workload: str) -> list[dict[str, Any]]:
    """The library's median per bench shape of the Triton task, with the bench rung's timing code."""
    import torch

    from harness.spec import load_task
    from rungs.timing.devices import device_for
    from rungs.timing.inputs import make_bench_inputs
    from rungs.timing.measure import TimingConfig, measure
    from rungs.ladder.benchmark import bench_entries

    if not torch.cuda.is_available():
        return []
    task = load_task(ROOT / "tasks" / f"{workload}.yaml")
    cfg = TimingConfig.from_dict(None)
    dev = device_for("cuda", cfg)
    rows = []
    for entry in bench_entries(task):
        inputs, _ = make_bench_inputs(entry, "cuda")
        try:
            with torch.no_grad():
                r = measure(library_fn(workload), inputs, dev, cfg)
            rows.append({"shape": entry["shape"], "us": r["runtime_us"]})
        except Exception as exc:  # noqa: BLE001 - a library that refuses a shape is a cell, not a crash
            rows.append({"shape": entry["shape"], "us": None, "error": f"{type(exc).__name__}: {exc}"[:80]})
        del inputs
        dev.release()
    return rows


def main(argv: list[str]) -> int:
    dirs = [Path(a) for a in argv if a]
    if not dirs:
        print(__doc__)
        return 2
    found = verdicts(dirs)
    print(f"{'workload':<11} {'DSL':<9} {'demo':<28} {'verdict':<18} {'shape':<34} {'us':>9} {'rate':>12} "
          f"{'roofline':>8} {'library us':>11} {'x library':>9}")
    for w in WORKLOADS:
        lib = library_times(w)
        lib_us = {label(r["shape"]): r.get("us") for r in lib}
        for dsl, name in DSLS.items():
            v = found.get((w, dsl))
            if v is None:
                print(f"{w:<11} {name:<9} {'-':<28} not checked")
                continue
            verdict = v["verdict"] + (f" ({v['failed_rung']})" if v.get("failed_rung") else "")
            bench, roof = rung(v, "benchmark"), rung(v, "roofline")
            fractions = {label(r["shape"]): r.get("roofline_fraction") for r in roof.get("per_shape", [])}
            shapes = bench.get("per_shape") or [{}]
            for i, s in enumerate(shapes):
                shape = label(s.get("shape", {}))
                us = s.get("runtime_us")
                rate = (f"{s['tflops']:.0f} TFLOP/s" if w != "softmax" and s.get("tflops") else
                        f"{s['gbps']:.0f} GB/s" if s.get("gbps") else "-")
                frac = fractions.get(shape)
                lu = lib_us.get(shape)
                lead = (w, name, v["demo"], verdict) if i == 0 else ("", "", "", "")
                print(f"{lead[0]:<11} {lead[1]:<9} {lead[2]:<28} {lead[3]:<18} {shape or '-':<34} "
                      f"{us if us is not None else '-':>9} {rate:>12} "
                      f"{format(frac, '.1%') if frac is not None else '-':>8} "
                      f"{format(lu, '.1f') if lu else ('no GPU' if not lib else '-'):>11} "
                      f"{format(lu / us, '.2f') if lu and us else '-':>9}")
        for r in lib:
            if r.get("error"):
                print(f"{'':<11} {LIBRARY[w]} at {label(r['shape'])}: {r['error']}")
    print(f"library: {', '.join(f'{w} {n}' for w, n in LIBRARY.items())}; 'x library' > 1 is faster than it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
