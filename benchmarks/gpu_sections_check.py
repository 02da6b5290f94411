"""The sections step on the H200 (issue 23): the marked flash-attention demo through the ladder up to the sections
step, then the numbers that say whether its shares can be trusted.

    PYTHONPATH=. python benchmarks/gpu_sections_check.py [--dsl triton|cuda|cute|tilelang] [--out DIR]

Prints, for the first bench shape of tasks/flash_attn.yaml (--dsl cuda / cute / tilelang: flash_attn_cuda.yaml /
flash_attn_cute.yaml / flash_attn_tilelang.yaml with that DSL's markers; there the global-timer span is not measured):
- the sections step's verdict and table (qk, softmax, pv: share of the programs' time, mean cycles, spread);
- `covered`: the sum of the regions' shares (the loop body is all three regions, so about 1 minus the prologue and
  epilogue);
- the instrumented kernel's span by Proton's global timer (first program's start to last program's end) against the
  timed build's time from do_bench, and the marked file's timed build against the unmarked demo's (the markers must
  cost nothing there: same SASS, so within noise).
Writes gpu_sections_check.log, the step's sections.json / sections.txt and Proton's raw trace to --out (default
$OUT, else a temporary folder), so a trace this parser misreads can be read by hand. A table comes last.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMOS = ROOT / "tasks" / "demos"
CASES = {  # dsl: (task, the marked demo, the same kernel unmarked)
    "triton": (ROOT / "tasks" / "flash_attn.yaml", DEMOS / "flash_attn_5_sections.py", DEMOS / "flash_attn_4_fa2.py"),
    "cuda": (ROOT / "tasks" / "flash_attn_cuda.yaml", DEMOS / "flash_attn_cuda_5_sections.py",
             DEMOS / "flash_attn_cuda_4_fast.py"),
    "cute": (ROOT / "tasks" / "flash_attn_cute.yaml", DEMOS / "flash_attn_cute_5_sections.py",
             DEMOS / "flash_attn_cute_4_fast.py"),
    "tilelang": (ROOT / "tasks" / "flash_attn_tilelang.yaml", DEMOS / "flash_attn_tilelang_5_sections.py",
                 DEMOS / "flash_attn_tilelang_4_fast.py"),
}
RUNGS = ("precheck", "compile", "run", "correctness", "sections")


def load(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def main() -> int:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", ""))
    ap.add_argument("--dsl", choices=sorted(CASES), default="triton")
    args = ap.parse_args()
    TASK, MARKED, PLAIN = CASES[args.dsl]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="sections-check-"))
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / f"gpu_sections_check-{args.dsl}.log", "w")  # noqa: SIM115 - open for the whole run

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    import torch
    import triton

    from rungs.ladder.benchmark import bench_entries
    from rungs.core.spec import load_task
    from rungs.ladder.ladder import Ladder
    from rungs.timing.inputs import make_bench_inputs

    if not torch.cuda.is_available():
        say("gpu_sections_check: no CUDA device here; run it on the H200")
        return 2
    say(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    task = load_task(TASK)
    work = Path(tempfile.mkdtemp(prefix="sections-work-"))
    from rungs.ladder.rung import rung

    ladder = Ladder(task=task, kernel=MARKED, work_dir=work, dump_dir=out / "dumps", seeds=1, keep_work=True,
                    rungs=[rung(n) for n in RUNGS])
    verdict = ladder.climb()
    for r in verdict.rungs:
        say(f"{r.status:>4} {r.name} ({r.seconds:.1f} s): {r.message[:300]}")
    step = verdict.rung("sections")
    if step is None or step.status != "ok":
        say("the sections step measured nothing; what Proton and the target left is copied to " + str(out))
        for f in list(work.rglob("trace*")) + list(work.rglob("sections*")):
            if f.is_file():
                shutil.copy2(f, out / f.name)
        return 1
    say(step.details)
    summary = json.loads((out / "dumps" / "sections.json").read_text())

    entry = bench_entries(task)[0]
    inputs, _ = make_bench_inputs(entry, "cuda")
    times = {}
    for label, path in (("marked (timed build)", MARKED), ("unmarked demo", PLAIN)):
        fn = load(path, "k_" + path.stem)
        with torch.no_grad():
            fn(*inputs)
            times[label] = triton.testing.do_bench(lambda: fn(*inputs), warmup=50, rep=300) * 1e3  # us
    kernel_ns = summary.get("kernel_ns")
    rows = [("region", "share", "mean cycles/program", "spread")]
    rows += [(r["region"], f"{r['share']:.1%}", f"{r['mean_cycles']:.0f}", f"{r['spread']:.2f}")
             for r in summary["regions"]]
    rows.append(("sum of shares (covered)", f"{summary['covered']:.1%}", "", ""))
    timed = times["marked (timed build)"]
    rows.append(("timed build, do_bench us", f"{timed:.1f}", "", ""))
    rows.append(("unmarked demo, do_bench us", f"{times['unmarked demo']:.1f}",
                 f"marked/unmarked {timed / times['unmarked demo']:.3f}", ""))
    if kernel_ns:
        rows.append(("instrumented span (global timer) us", f"{kernel_ns / 1e3:.1f}",
                     f"span/timed {kernel_ns / 1e3 / timed:.3f}", ""))
    say(f"\nat {entry['shape']} {entry['dtype']}; the step's dumps are in {out / 'dumps'}")
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        say("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
