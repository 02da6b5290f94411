"""What limits an attention demo beside cuDNN, by Nsight Compute, non-causal and causal (on a GPU, no harness):

    python3 benchmarks/attention_ncu.py [DEMO.py ...]       # default: tasks/demos/flash_attn_cute_6_overlap.py
    ATTN_SHAPES=8x16x8192x128 python3 benchmarks/attention_ncu.py DEMO.py

Per shape and mask, each demo's kernels and cuDNN's SDPA are called once to compile and warm, then once each
inside a profiler range that `ncu --profile-from-start off` captures (this script starts ncu on itself: one
process per demo and mask, the sections below). The table: each kernel's duration, grid and block, registers a
thread, occupancy, SM and tensor-pipe throughput and the warps' top stall reasons: where a demo's time goes against
the library's on the same inputs (for issue 38: why CuTe DSL's causal attention and TileLang's are short of cuDNN).
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [tuple(int(n) for n in s.split("x")) for s in os.environ.get("ATTN_SHAPES", "4x32x4096x128").split(",")]
SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "ComputeWorkloadAnalysis"]
STALLS = ["long_scoreboard", "short_scoreboard", "barrier", "membar", "wait", "math_pipe_throttle", "mio_throttle",
          "lg_throttle", "dispatch_stall", "not_selected", "selected", "sleeping", "no_instruction", "branch_resolving",
          "drain", "misc", "imc_miss", "tex_throttle"]
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"  # warps stalled per issued instruction
METRICS = {  # ncu's "Metric Name" -> the column shown
    "Duration": "us", "Grid Size": "grid", "Block Size": "block", "Registers Per Thread": "regs",
    "Achieved Occupancy": "occ%", "Compute (SM) Throughput": "SM%", "Memory Throughput": "mem%",
    "Issue Slots Busy": "issue%", "Waves Per SM": "waves",
}


def child(demo_path: str, shape: str, causal: bool) -> None:
    """Under ncu: warm both, then one call of each inside the profiler range."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from attention_vs_cudnn import load
    B, H, S, D = (int(n) for n in shape.split("x"))
    demo = load(Path(demo_path))
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))

    def cudnn() -> torch.Tensor:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return sdpa(q, k, v, is_causal=causal)
    for _ in range(2):
        demo.kernel(q, k, v, causal), cudnn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    demo.kernel(q, k, v, causal)
    cudnn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def profile(demo: str, shape: str, causal: bool) -> list[dict[str, str]]:
    cmd = ["ncu", "--profile-from-start", "off", "--csv", "--page", "details", "--clock-control", "none",
           *[a for s in SECTIONS for a in ("--section", s)], "--metrics", ",".join(STALL.format(s) for s in STALLS),
           sys.executable, __file__, "--child", demo, shape, "1" if causal else "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if os.environ.get("NCU_RAW"):  # a folder: ncu's whole CSV kept per run
        Path(os.environ["NCU_RAW"]).mkdir(parents=True, exist_ok=True)
        (Path(os.environ["NCU_RAW"]) / f"{Path(demo).stem}-{shape}-{int(causal)}.csv").write_text(done.stdout + done.stderr)
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith('"')]
    if not rows:
        print(f"ncu gave no rows for {demo} {shape} causal={causal}: {done.stderr[-400:]} {done.stdout[-400:]}")
        return []
    kernels: dict[str, dict[str, str]] = {}
    stalls: dict[str, list[tuple[float, str]]] = {}
    for r in csv.DictReader(io.StringIO("\n".join(rows))):
        key = r["ID"]
        k = kernels.setdefault(key, {"kernel": r["Kernel Name"][:40]})
        name, value = r["Metric Name"], r["Metric Value"]
        if name in METRICS:
            k[METRICS[name]] = value
        if name == "Duration":  # ncu picks its unit per value
            scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}
            k["us"] = f"{float(value.replace(',', '')) * scale.get(r.get('Metric Unit', 'us'), 1):.1f}"
        k.setdefault("grid", r.get("Grid Size", ""))
        k.setdefault("block", r.get("Block Size", ""))
        if name.startswith("smsp__average_warps_issue_stalled_"):
            try:
                stalls.setdefault(key, []).append((float(value.replace(",", "")), name.split("_stalled_")[1].split("_per")[0]))
            except ValueError:
                pass
        if r.get("Rule Name") and r.get("Rule Type") in ("WRN", "OPT") and r.get("Rule Description"):
            k.setdefault("rules", "")
            k["rules"] += f" [{r['Rule Name']}] {r['Rule Description'][:160]}"
    for key, k in kernels.items():
        top = sorted(stalls.get(key, []), reverse=True)[:3]
        k["stalls"] = ", ".join(f"{n} {v:.2f}" for v, n in top)
    return list(kernels.values())


def main(demos: list[str]) -> None:
    for shape in ("x".join(map(str, s)) for s in SHAPES):
        for causal in (False, True):
            for demo in demos:
                print(f"== {Path(demo).stem} {shape} {'causal' if causal else 'full'}")
                for k in profile(demo, shape, causal):
                    print("  " + " | ".join(f"{c}={k.get(c, '')}" for c in ("kernel", *METRICS.values(), "stalls")))
                    if k.get("rules"):
                        print("    rules:" + k["rules"][:900])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
    else:
        main(sys.argv[1:] or [str(ROOT / "tasks/demos/flash_attn_cute_6_overlap.py")])
