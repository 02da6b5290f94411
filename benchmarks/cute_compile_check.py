"""Compile every CuTe DSL demo (tasks/demos/*_cute_*.py) for sm_90a without a GPU and read its SASS.

Each demo module exposes compile_for(*tensors, stream): the same cute.compile its kernel(...) runs, fed here with
CPU torch tensors of the task's bench and test shapes (torch.empty, so nothing is filled) and a fake stream. The cubin that
CuTe DSL keeps is disassembled with cuobjdump to check that the fast kernels really use Hopper's warpgroup MMA
(HGMMA) and TMA loads (UTMALDG), and to read the register count. *_1_nocompile demos must fail to compile.

    python benchmarks/cute_compile_check.py            # all demos
    python benchmarks/cute_compile_check.py gemm_cute  # only files whose name contains this
    python benchmarks/cute_compile_check.py --bench-only  # only the bench shapes (the test shapes take minutes)

Prints a table last; exit status 1 when a demo does not behave as its name says. Logs go to $OUT when set.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMOS = ROOT / "tasks" / "demos"
DUMP = Path(tempfile.mkdtemp(prefix="cute_compile_check_"))
# CuTe DSL reads these when it compiles; they must be set before cutlass is imported.
os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ["CUTE_DSL_KEEP"] = "ptx,cubin"
os.environ["CUTE_DSL_DUMP_DIR"] = str(DUMP)

import torch  # noqa: E402
import yaml  # noqa: E402


def _cuobjdump() -> str | None:
    """cuobjdump from PATH, the CUDA toolkit, or the copy that ships inside triton."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for candidate in (Path("/usr/local/cuda/bin/cuobjdump"),):
        if candidate.exists():
            return str(candidate)
    try:
        import triton
    except ImportError:
        return None
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.exists() else None


def _shapes(task: str, bench_only: bool) -> list[dict]:
    spec = yaml.safe_load((ROOT / "tasks" / f"{task}.yaml").read_text())
    return list(spec["shapes"]["bench"]) + ([] if bench_only else list(spec["shapes"]["test"]))


def _tensors(task: str, shape: dict, module) -> tuple:
    """What compile_for takes for this task: the inputs, then the output (never filled: only compiled). A gemm
    demo with a prepare(a, b) (padding for TMA) gets what its kernel(...) would pass."""
    bf16 = torch.bfloat16
    if task.startswith("gemm"):
        M, N, K = shape["M"], shape["N"], shape["K"]
        a, b = torch.empty(M, K, dtype=bf16), torch.empty(K, N, dtype=bf16)
        if hasattr(module, "prepare"):
            return module.prepare(a, b)
        return a, b, torch.empty(M, N, dtype=bf16)
    size = (shape["B"], shape["H"], shape["S"], shape["D"])
    q, k, v, o = (torch.empty(size, dtype=bf16) for _ in range(4))
    return q, k, v, o, bool(shape["causal"])


def _sass_facts(cubins: list[Path], tool: str | None) -> dict:
    if not cubins or tool is None:
        return {"hgmma": "?", "utmaldg": "?", "regs": "?"}
    sass = "".join(subprocess.run([tool, "--dump-sass", str(c)], capture_output=True, text=True).stdout
                   for c in cubins)
    usage = "".join(subprocess.run([tool, "--dump-resource-usage", str(c)], capture_output=True, text=True).stdout
                    for c in cubins)
    regs = sorted({int(r) for r in re.findall(r"REG:(\d+)", usage)})
    # Register spills and local arrays both land in local memory: STACK or LOCAL above zero.
    spills = any(int(x) > 0 for x in re.findall(r"(?:STACK|LOCAL):(\d+)", usage))
    return {"hgmma": "yes" if "HGMMA" in sass else "no", "utmaldg": "yes" if "UTMALDG" in sass else "no",
            "regs": (f"{regs[-1]}" if regs else "?") + (" (local mem)" if spills else "")}  # the most, over shapes


def _keep(stem: str) -> list[Path]:
    """Move what the last compiles dumped into a folder of their own (demos reuse the same function names, so
    their artifacts would overwrite each other) and return its cubins."""
    folder = DUMP / stem
    folder.mkdir(exist_ok=True)
    for f in [*DUMP.glob("*.cubin"), *DUMP.glob("*.ptx")]:
        f.rename(folder / f.name)
    return sorted(folder.glob("*.cubin"))


def check(path: Path, tool: str | None, log, bench_only: bool) -> dict:
    task = "flash_attn" if path.name.startswith("flash_attn") else "gemm"
    expect_fail = "_1_nocompile" in path.name
    row = {"file": path.name, "compiled": "no", "seconds": 0.0, "hgmma": "-", "utmaldg": "-", "regs": "-",
           "ok": False, "note": ""}
    start = time.perf_counter()
    try:
        import cutlass.runtime
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for shape in _shapes(f"{task}_cute", bench_only):
            module.compile_for(*_tensors(task, shape, module), cutlass.runtime.make_fake_stream())
    except Exception as exc:  # a compile error is this script's result, not its failure
        row["seconds"] = time.perf_counter() - start
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))  # the DSL colours its diagnostics
        first = next((ln for ln in text.splitlines() if ln.strip()), type(exc).__name__)
        row["note"] = first.strip()[:90]
        row["ok"] = expect_fail
        log.write(f"== {path.name}: {type(exc).__name__}\n{exc}\n")
        _keep(path.stem)
        return row
    row["seconds"] = time.perf_counter() - start
    row["compiled"] = "yes"
    row.update(_sass_facts(_keep(path.stem), tool))
    row["ok"] = not expect_fail
    if path.name.startswith("gemm_cute_4"):  # the fast gemm must be TMA + wgmma
        row["ok"] = row["ok"] and row["hgmma"] == "yes" and row["utmaldg"] == "yes"
    if expect_fail:
        row["note"] = "expected a compile error"
    log.write(f"== {path.name}: compiled in {row['seconds']:.1f} s\n")
    return row


def main(argv: list[str]) -> int:
    bench_only = "--bench-only" in argv
    names = [a for a in argv if not a.startswith("--")]
    pattern = names[0] if names else ""
    files = sorted(p for p in DEMOS.glob("*_cute_*.py") if pattern in p.name)
    if not files:
        print(f"no CuTe DSL demo matches {pattern!r} under {DEMOS}")
        return 1
    out_dir = Path(os.environ.get("OUT") or DUMP)
    out_dir.mkdir(parents=True, exist_ok=True)
    tool = _cuobjdump()
    with open(out_dir / "cute_compile_check.log", "w") as log:
        rows = [check(p, tool, log, bench_only) for p in files]
    print(f"arch {os.environ['CUTE_DSL_ARCH']}, cubins in {DUMP}, log in {out_dir / 'cute_compile_check.log'}"
          + ("" if tool else " (no cuobjdump found: SASS not read)"))
    header = f"{'file':32} {'compiled':8} {'seconds':>7} {'HGMMA':5} {'UTMALDG':7} {'registers':12} {'ok':3} note"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['file']:32} {r['compiled']:8} {r['seconds']:7.1f} {r['hgmma']:5} {r['utmaldg']:7} {r['regs']:12} "
              f"{'ok' if r['ok'] else 'BAD':3} {r['note']}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
