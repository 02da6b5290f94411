"""The dumps rung: every compiler stage Triton keeps (TTIR, TTGIR, LLIR, PTX, CUBIN) plus SASS, written to
dumps/<run>/<iter>/, and a resource summary the model can read (summary.txt, and summary.json for tools and
for the next iteration's diff).

SASS and the resource table come from one cuobjdump call per cubin (the system's, else the one the Triton
wheel carries), all cubins at once, so this works with no GPU and takes about as long as the slowest cubin; a
cubin disassembled before (the same bytes, the same tool) is read from the harness cache instead.
Triton's metadata (`<kernel>.json`, written by the worker) adds what the cubin does not hold: warps, stages,
constexprs and the dynamic shared memory.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rungs.core.result import RungResult
from rungs.ladder.dot_precision import kernel_precision, task_precision
from rungs.ladder.sass import finish, resources, rollup, summarize_kernel, summary_diff, summary_table

if TYPE_CHECKING:
    from rungs.ladder.climb import Climb

CUOBJDUMP_TIMEOUT_S = 60


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


def disassemble(cubin: Path) -> tuple[str, dict[str, int]]:
    """SASS and the resource usage of the kernel a cubin is named for (its stem before any `.N`), from a single
    cuobjdump run. A cubin may hold more functions than that one (a CUDA C++ source with two kernels compiles to one
    module, written once under each kernel's name): the SASS and the figures are that function's own where its name
    is found, else the whole module's (a DSL that names its function otherwise)."""
    exe = tool("cuobjdump")
    if exe is None:
        raise FileNotFoundError("no cuobjdump on PATH or in the Triton wheel")
    out = _listing(exe, cubin)
    per_function = resources(out)
    name = cubin.stem.split(".")[0]
    if name in per_function and len(per_function) > 1:
        return function_sass(out, name), per_function[name]
    return out, next(iter(per_function.values()), {})


SASS_CACHE_FILES = 4000
"""At most this many listings are kept in the harness cache's `sass/` folder; past it the least recently used half
goes (a listing is tens to hundreds of kB)."""


def _listing(exe: str, cubin: Path) -> str:
    """cuobjdump's listing of a cubin, from the harness cache when these bytes were disassembled before by this
    tool. nvdisasm (which cuobjdump runs) was 14% of the CPU suite's time (perf), mostly on cubins already seen:
    the same demo kernel climbed again, a run resumed, a check repeated. The key is the cubin's bytes and the tool
    itself, so a listing is exactly what the tool printed for those bytes: a candidate cannot place one under
    another cubin's key (the cache is written by the harness, outside the sandbox), and a stale tool misses."""
    from rungs.core.atomic import atomic_write
    from rungs.ladder.roofline import cache_dir
    from rungs.sandbox.bwrap import tool_command

    # A cubin's line table names the file it was built from, under the worker's folder, whose name mkdtemp made
    # (rungs/sandbox/pool._spawn; in `harness eval -j N`, inside a folder of the eval's, also mkdtemp's): the same
    # kernel built twice differs in those characters and nowhere else. The key leaves them out; the listing (SASS and
    # resources) does not show the path.
    data = re.sub(rb"(harness-eval-[a-z0-9_]{8}/)?harness-worker-[a-z0-9_]{8}", b"harness-worker-********",
                  cubin.read_bytes())
    st = os.stat(exe)
    key = hashlib.sha256(data + f"\0{os.path.realpath(exe)}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()
    folder = cache_dir() / "sass"
    path = folder / f"{key[:32]}.txt"
    try:
        out = path.read_text()
        os.utime(path)  # recently used: kept by the pruning below
        return out
    except (OSError, UnicodeDecodeError):
        pass
    argv = tool_command([exe, "--dump-resource-usage", "--dump-sass", str(cubin.resolve())], [cubin.resolve().parent])
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=CUOBJDUMP_TIMEOUT_S,
                         stdin=subprocess.DEVNULL).stdout
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, out)
        _prune(folder)
    except OSError:  # a read-only or full cache costs the next climb a disassembly, nothing else
        pass
    return out


def _prune(folder: Path) -> None:
    files = list(folder.glob("*.txt"))
    if len(files) <= SASS_CACHE_FILES:
        return
    def used(f: Path) -> float:
        try:
            return f.stat().st_mtime
        except OSError:
            return 0.0
    for f in sorted(files, key=used)[: len(files) // 2]:
        f.unlink(missing_ok=True)


def function_sass(text: str, name: str) -> str:
    """One function's part of a cuobjdump listing: from its `Function : name` header to the next function's."""
    parts = re.split(r"(?m)^(?=\s*Function : )", text)
    mine = [p for p in parts if re.match(rf"\s*Function : {re.escape(name)}\s*$", p.splitlines()[0] if p else "")]
    return "".join(mine) if mine else text


def _metadata(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        return {}


def load_summaries(folder: Path) -> list[dict[str, Any]] | str | None:
    """An iteration's summary: structured when it has summary.json, else the text of summary.txt, else None."""
    if (folder / "summary.json").is_file():
        try:
            return json.loads((folder / "summary.json").read_text())
        except json.JSONDecodeError:
            pass
    if (folder / "summary.txt").is_file():
        return (folder / "summary.txt").read_text()
    return None


def _text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace") if path.is_file() else None
    except OSError:
        return None


def rung(compiled: Path, dest: Path, previous: Path | None, task: Any = None) -> RungResult:
    """`task` (a TaskSpec): its float32 data and tolerance, against which reduced-precision matrix math is judged
    (rungs/ladder/dot_precision.py); None: not judged."""
    precision = task_precision(task) if task is not None else None
    dest.mkdir(parents=True, exist_ok=True)
    for f in compiled.iterdir():
        shutil.copy2(f, dest / f.name)
    cubins = sorted(dest.glob("*.cubin"), key=_compile_order)
    problems = []
    summaries = []
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1, max(len(cubins), 1))) as pool:
        done = list(zip(cubins, pool.map(_try_disassemble, cubins)))
    for cubin, (sass, usage, error) in done:
        if error:
            problems.append(f"{cubin.name}: {error}")
            continue
        (dest / f"{cubin.stem}.sass").write_text(sass)
        summary = summarize_kernel(cubin.stem, sass, usage, _metadata(dest / f"{cubin.stem}.json"))
        summary["precision"] = kernel_precision(summary["matrix"], _text(dest / f"{cubin.stem}.ttir"), precision)
        summaries.append(summary)
    if not summaries:
        return RungResult(name="dumps", status="skip", message="no cubin to disassemble; " + "; ".join(problems))
    summaries = finish(summaries)
    table = summary_table(summaries)
    (dest / "summary.txt").write_text(table + "\n")
    (dest / "summary.json").write_text(json.dumps(summaries, indent=1, default=str))
    details = table
    before = load_summaries(previous) if previous is not None else None
    if before is not None:
        details += "\n\nchange since the previous iteration:\n" + summary_diff(before, summaries)
    if problems:
        details += "\n\nnot disassembled: " + "; ".join(problems)
    metrics = {"registers": max(s["registers"] for s in summaries),
               "spill_bytes": sum(s["spill_bytes"] for s in summaries),
               "shared_bytes": max(s["shared_bytes"] for s in summaries),
               "matrix_instructions": sum(n for s in summaries for n in s["matrix"].values()),
               "precision_breaks": sum(1 for s in summaries if (s["precision"] or {}).get("breaks")),
               "dump_dir": str(dest)}
    return RungResult(name="dumps", status="ok", message=rollup(summaries), metrics=metrics, details=details)


def _compile_order(cubin: Path) -> tuple[str, int]:
    """matmul_kernel, matmul_kernel.1, matmul_kernel.2 ...: the order the worker compiled them in."""
    base, _, n = cubin.stem.rpartition(".")
    return (base, int(n)) if base and n.isdigit() else (cubin.stem, 0)


def _try_disassemble(cubin: Path) -> tuple[str, dict[str, int], str]:
    try:
        sass, usage = disassemble(cubin)
        return sass, usage, ""
    except (OSError, subprocess.SubprocessError) as exc:
        return "", {}, str(exc)


def climb_rung(climb: "Climb") -> RungResult:
    compiled = climb.job_dir / "compiled" if climb.job_dir is not None else None
    if compiled is None or not compiled.is_dir():
        return RungResult(name="dumps", status="skip", message="nothing was compiled")
    return rung(compiled, climb.dumps_dest, climb.previous_dump_dir, climb.task)
