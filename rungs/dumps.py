"""The dumps rung: every compiler stage Triton keeps (TTIR, TTGIR, LLIR, PTX, CUBIN) plus SASS, written to
dumps/<run>/<iter>/, and a resource summary the model can read.

SASS comes from cuobjdump (the system's, else the one the Triton wheel carries), so this works with no GPU.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from rungs.result import RungResult
from rungs.sass import resources, summarize_kernel, summary_diff, summary_table


def tool(name: str) -> str | None:
    """A CUDA binary tool: on PATH, else the copy inside the Triton wheel."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import triton

        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
        return str(bundled) if bundled.is_file() else None
    except ImportError:
        return None


def disassemble(cubin: Path) -> str:
    exe = tool("cuobjdump")
    if exe is None:
        raise FileNotFoundError("no cuobjdump on PATH or in the Triton wheel")
    return subprocess.run([exe, "--dump-sass", str(cubin)], capture_output=True, text=True, check=True,
                          timeout=60).stdout


def resource_usage(cubin: Path) -> dict[str, dict[str, int]]:
    exe = tool("cuobjdump")
    if exe is None:
        return {}
    out = subprocess.run([exe, "--dump-resource-usage", str(cubin)], capture_output=True, text=True, timeout=60)
    return resources(out.stdout)


def rung(compiled: Path, dest: Path, previous: Path | None) -> RungResult:
    dest.mkdir(parents=True, exist_ok=True)
    for f in compiled.iterdir():
        shutil.copy2(f, dest / f.name)
    summaries = []
    problems = []
    for cubin in sorted(dest.glob("*.cubin")):
        try:
            sass = disassemble(cubin)
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(f"{cubin.name}: {exc}")
            continue
        (dest / f"{cubin.stem}.sass").write_text(sass)
        usage = next(iter(resource_usage(cubin).values()), {})
        summaries.append(summarize_kernel(cubin.stem, sass, usage))
    if not summaries:
        return RungResult(name="dumps", status="skip", message="no cubin to disassemble; " + "; ".join(problems))
    table = summary_table(summaries)
    (dest / "summary.txt").write_text(table + "\n")
    details = table
    if previous is not None and (previous / "summary.txt").is_file():
        details += "\n\nchange since the previous iteration:\n" + summary_diff((previous / "summary.txt").read_text(), table)
    verdicts = "; ".join(f"{s['kernel']}: {s['verdict']}" for s in summaries)
    metrics = {"registers": max(s["registers"] for s in summaries), "spill_bytes": sum(s["spill_bytes"] for s in summaries),
               "dump_dir": str(dest)}
    return RungResult(name="dumps", status="ok", message=verdicts[:600], metrics=metrics, details=details)
