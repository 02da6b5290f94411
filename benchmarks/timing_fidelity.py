"""How far to trust the harness's timings, on the GPU machine (not a test).

For kernels over 20 us (the softmax demo kernels at 32768x8192, torch.softmax, a bf16 4096^3 matmul, an
elementwise x*2 over 1 GiB) and one short kernel timed through CUDA graphs, prints the harness's median
(rungs/timing/measure.py, the code the worker runs), Nsight Compute's gpu__time_duration for the same kernel
(ncu --clock-control none, its default cache flush before each kernel, in a child process that launches each
kernel a few times between cudaProfilerStart/Stop, groups split by a marker kernel), the difference in %, and
the same kernel timed twice (difference in %). Then the per-candidate overhead of the ladder on a demo kernel, cold and warm: worker start,
import, compile, run, bench (inputs, first call, warm-up, timed), judge.

    python3 benchmarks/timing_fidelity.py [--out DIR] [--no-ncu] [--baseline-cache DIR]

Writes timing_fidelity.json (everything, samples and ncu's CSV included) and timing_fidelity.log to --out
(default $OUT), and prints a short table last.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rungs.ladder.profile import find_ncu  # noqa: E402

MARKER = "fidelity_marker_kernel"
NCU_CALLS = 5
UNIT_TO_US = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}


class Log:
    """print() that also appends to the log file as it goes (a step killed at its time limit leaves its log)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        if path:
            path.write_text("")

    def __call__(self, *parts: Any) -> None:
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        if self.path:
            with open(self.path, "a") as f:
                f.write(line + "\n")


def _load_demo(name: str) -> Callable[..., Any]:
    from rungs.timing.inputs import load_function

    return load_function(f"{ROOT / 'tasks' / 'demos' / name}.py:kernel")


def kernels() -> dict[str, Callable[[], tuple[Callable[..., Any], list[Any]]]]:
    """name -> setup() returning (fn, inputs); inputs made on the GPU, random (never zeros)."""
    import torch

    def softmax_demo(name: str, m: int, n: int) -> Callable[[], tuple[Callable[..., Any], list[Any]]]:
        return lambda: (_load_demo(name), [torch.randn(m, n, device="cuda")])

    def matmul() -> tuple[Callable[..., Any], list[Any]]:
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        return torch.matmul, [a, b]

    def scale() -> tuple[Callable[..., Any], list[Any]]:  # a kernel, where d.copy_(s) would be a memcpy ncu skips
        src = torch.randn(1 << 28, device="cuda")
        return (lambda s, d: torch.mul(s, 2.0, out=d)), [src, torch.empty_like(src)]

    return {
        "softmax_3_rowwise 32768x8192 fp32": softmax_demo("softmax_3_rowwise", 32768, 8192),
        "softmax_4_tuned 32768x8192 fp32": softmax_demo("softmax_4_tuned", 32768, 8192),
        "torch.softmax 32768x8192 fp32": lambda: ((lambda x: torch.softmax(x, -1)),
                                                  [torch.randn(32768, 8192, device="cuda")]),
        "torch.matmul bf16 4096^3": matmul,
        "x*2 fp32 1 GiB (copy-like)": scale,
        "softmax_4_tuned 1024x4096 (short)": softmax_demo("softmax_4_tuned", 1024, 4096),
    }


# ---- the ncu child -------------------------------------------------------------------------------------------
@triton.jit
def fidelity_marker_kernel(ptr):
    """One thread, one store: its name splits ncu's rows into groups, one per kernel timed."""
    tl.store(ptr, 1.0)


def ncu_child(calls: int) -> None:
    """Runs under ncu: each kernel `calls` times between cudaProfilerStart/Stop, a marker kernel before each group."""
    import torch

    flag = torch.zeros(1, device="cuda")
    for name, setup in kernels().items():
        fn, inputs = setup()
        with torch.no_grad():
            for _ in range(3):  # compile and warm outside the profiled range
                fn(*inputs)
            fidelity_marker_kernel[(1,)](flag)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            fidelity_marker_kernel[(1,)](flag)
            for _ in range(calls):
                fn(*inputs)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        del fn, inputs
        torch.cuda.empty_cache()
        print(f"child: {name} done", flush=True)


def parse_ncu_csv(text: str, names: list[str], calls: int) -> dict[str, dict[str, Any]]:
    """gpu__time_duration per call for each group (groups start at a marker kernel, in the order of `names`)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no CSV header in ncu's output")
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"'))))
            if r.get("Metric Name") == "gpu__time_duration.sum"]
    groups: list[list[tuple[str, float]]] = []
    for r in rows:
        kernel = r.get("Kernel Name") or r.get("Function Name") or ""
        if MARKER in kernel:
            groups.append([])
            continue
        if not groups:
            continue
        unit = (r.get("Metric Unit") or "ns").strip()
        value = float((r.get("Metric Value") or "nan").replace(",", ""))
        groups[-1].append((kernel, value * UNIT_TO_US.get(unit, 1e-3)))
    out = {}
    for name, group in zip(names, groups):
        per_call = len(group) // calls if calls else 0
        if per_call and per_call * calls == len(group):
            sums = [sum(t for _, t in group[i * per_call:(i + 1) * per_call]) for i in range(calls)]
        else:
            sums = [sum(t for _, t in group) / max(calls, 1)]
        out[name] = {"ncu_us": statistics.median(sums), "kernels_per_call": per_call or None,
                     "kernel_names": sorted({k[:80] for k, _ in group}), "per_call_us": sums}
    return out


def run_ncu(log: Log) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    ncu = find_ncu()
    if ncu is None:
        log("ncu: not found; the ncu column stays empty")
        return {}, {"error": "ncu not found"}
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum",
           "--csv", "--print-units", "base", sys.executable, str(Path(__file__).resolve()), "--ncu-child",
           "--calls", str(NCU_CALLS)]
    log("ncu:", " ".join(cmd))
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=100,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        log("ncu: timed out after 100 s")
        return {}, {"error": "timed out"}
    info = {"returncode": proc.returncode, "seconds": time.monotonic() - t0, "stdout": proc.stdout[-200_000:],
            "stderr": proc.stderr[-20_000:]}
    log(f"ncu: exit {proc.returncode} after {info['seconds']:.0f} s")
    try:
        return parse_ncu_csv(proc.stdout, list(kernels()), NCU_CALLS), info
    except ValueError as exc:
        log(f"ncu: {exc}; stderr tail: {proc.stderr[-500:]}")
        info["error"] = str(exc)
        return {}, info


# ---- the harness's side --------------------------------------------------------------------------------------
def harness_times(log: Log, label: str) -> dict[str, dict[str, Any]]:
    import torch

    from rungs.timing.devices import CudaDevice
    from rungs.timing.measure import TimingConfig, measure

    cfg = TimingConfig()
    dev = CudaDevice(cfg)
    out = {}
    for name, setup in kernels().items():
        fn, inputs = setup()
        with torch.no_grad():
            r = measure(fn, inputs, dev, cfg)
        out[name] = r
        log(f"{label}: {name}: {r['runtime_us']:.2f} us median, IQR {r['iqr_us']:.2f}, {r['reps']} reps "
            f"({r['stop']}), mode {r['mode']}" + (f" x{r['calls_per_replay']}" if r["mode"] == "graph" else "")
            + (f", note: {r['note']}" if r["note"] else ""))
        del fn, inputs
        dev.release()
    return out


def ladder_overhead(log: Log, cache: Path) -> list[dict[str, Any]]:
    from rungs.core.spec import load_task
    from rungs.ladder.ladder import check

    task = load_task(ROOT / "tasks" / "softmax.yaml")
    kernel = ROOT / "tasks" / "demos" / "softmax_3_rowwise.py"
    runs = []
    for label in ("cold (baselines timed)", "warm"):
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory() as work:
            verdict = check(task, kernel, Path(work), baseline_cache=cache)
        wall = time.monotonic() - t0
        bench = verdict.rung("benchmark")
        m = bench.metrics if bench else {}
        runs.append({"label": label, "wall_s": wall, "verdict": verdict.summary,
                     "rungs": {r.name: r.seconds for r in verdict.rungs}, "breakdown_s": m.get("breakdown_s"),
                     "overhead_s": m.get("overhead_s"), "baseline_s": m.get("baseline_s"),
                     "benchmark": bench.model_dump() if bench else None})
        log(f"ladder {label}: {verdict.summary}; wall {wall:.2f} s; rungs "
            + ", ".join(f"{r.name} {r.seconds:.2f}" for r in verdict.rungs)
            + f"; overhead {m.get('overhead_s')} s; breakdown {m.get('breakdown_s')}")
    return runs


def pct(a: float | None, b: float | None) -> float | None:
    return (a - b) / b * 100 if a and b else None


def table(names: list[str], first: dict, second: dict, ncu: dict) -> list[str]:
    def f(v: Any, spec: str) -> str:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return format(v, spec)
        return "-".rjust(int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0))

    lines = [f"{'kernel':<36} {'harness_us':>10} {'iqr_us':>7} {'mode':>6} {'ncu_us':>9} {'vs ncu %':>8} "
             f"{'again_us':>9} {'twice %':>7}"]
    for n in names:
        a, b, c = first.get(n, {}), second.get(n, {}), ncu.get(n, {})
        lines.append(f"{n[:36]:<36} {f(a.get('runtime_us'), '10.2f')} {f(a.get('iqr_us'), '7.2f')} "
                     f"{a.get('mode', '-'):>6} {f(c.get('ncu_us'), '9.2f')} "
                     f"{f(pct(a.get('runtime_us'), c.get('ncu_us')), '+8.1f')} {f(b.get('runtime_us'), '9.2f')} "
                     f"{f(pct(b.get('runtime_us'), a.get('runtime_us')), '+7.1f')}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench-out"))
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--no-ladder", action="store_true")
    parser.add_argument("--baseline-cache", default=None)
    parser.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=NCU_CALLS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ncu_child:
        ncu_child(args.calls)
        return 0
    import torch

    if not torch.cuda.is_available():
        print("timing_fidelity: no CUDA device", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "timing_fidelity.log")
    log(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    t0 = time.monotonic()
    names = list(kernels())
    first = harness_times(log, "harness #1")
    ncu, ncu_info = ({}, {"skipped": True}) if args.no_ncu else run_ncu(log)
    for n in names:
        if n in ncu:
            log(f"ncu: {n}: {ncu[n]['ncu_us']:.2f} us per call, {ncu[n]['kernels_per_call']} kernel(s) per call: "
                f"{', '.join(ncu[n]['kernel_names'])[:160]}")
    second = harness_times(log, "harness #2")
    rows = table(names, first, second, ncu)
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "harness_1": first, "harness_2": second, "ncu": ncu, "ncu_run": ncu_info,
                              "table": rows, "ladder": []}
    (out / "timing_fidelity.json").write_text(json.dumps(result, indent=1, default=str))
    log("")  # the table before the ladder runs: a step killed at its time limit still has it
    log("== timing fidelity (harness median vs ncu gpu__time_duration; same kernel timed twice) ==")
    for ln in rows:
        log(ln)
    if not args.no_ladder:
        cache = Path(args.baseline_cache) if args.baseline_cache else Path(tempfile.mkdtemp()) / "baselines"
        result["ladder"] = ladder_overhead(log, cache)
        for run in result["ladder"]:
            b = run["breakdown_s"] or {}
            log(f"per-candidate seconds, {run['label']}: " + ", ".join(f"{k} {v:.2f}" for k, v in b.items())
                + f" | beyond compile and timed runs: {run['overhead_s']} s")
    result["seconds"] = time.monotonic() - t0
    (out / "timing_fidelity.json").write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
