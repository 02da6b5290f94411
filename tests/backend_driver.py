"""Drive a backend's worker half as the worker's compile phase does, for the backend tests and the demo check:
import the candidate under the compile capture, call its entry on each test shape's inputs (CPU tensors: nothing
is launched), and write the compiled kernels' stages."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from rungs.backends import load_worker
from rungs.ladder.dumps import tool
from rungs.worker.compile_phase import Launches

ROOT = Path(__file__).resolve().parent.parent


def test_inputs(task: str, limit: int | None = None) -> list[tuple[dict[str, Any], tuple[Any, ...]]]:
    spec = yaml.safe_load((ROOT / "tasks" / f"{task}.yaml").read_text())
    ref_file, _, fn = spec["inputs"].partition(":")
    module_spec = importlib.util.spec_from_file_location(f"{task}_inputs", ROOT / "tasks" / ref_file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    import torch

    dtype = getattr(torch, spec["dtypes"][0])
    shapes = spec["shapes"]["test"][:limit]
    return [(shape, getattr(module, fn)(shape, dtype, 0)) for shape in shapes]


def compile_demo(dsl: str, path: Path, task: str, out_dir: Path, limit: int | None = None) -> dict[str, Any]:
    """Returns {"seconds", "launches", "kernels"} as the worker's compile phase would report them."""
    worker = load_worker(name=dsl)
    launches = Launches()
    restore = worker.install_compile_capture(False, launches)
    t0 = time.perf_counter()
    try:
        spec = importlib.util.spec_from_file_location(f"candidate_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        for shape, inputs in test_inputs(task, limit):
            launches.shape = shape
            module.kernel(*inputs)
    finally:
        restore()
    distinct: dict[Any, tuple[str, Any, list[Any]]] = {}
    for name, handle, shape in launches.compiled:
        _, _, shapes = distinct.setdefault(getattr(handle, "hash", None) or id(handle), (name, handle, []))
        if shape not in shapes:
            shapes.append(shape)
    out_dir.mkdir(parents=True, exist_ok=True)
    stems: dict[str, int] = {}
    compiled = []
    for name, handle, shapes in distinct.values():
        n = stems[name] = stems.get(name, -1) + 1
        compiled.append((name if n == 0 else f"{name}.{n}", handle, shapes))
    kernels = worker.write_compiled(compiled, out_dir)
    return {"seconds": time.perf_counter() - t0, "launches": launches.count, "kernels": kernels}


def sass(cubin: Path) -> str:
    """SASS by the dumps rung's own cuobjdump (the system's, else the Triton wheel's)."""
    exe = tool("cuobjdump")
    assert exe is not None, "no cuobjdump"
    return subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True, check=True, timeout=120).stdout


def s_and_p_v_waits(code: str) -> tuple[list[str], re.Match[str], re.Match[str]]:
    """An attention kernel's waits in its SASS: every `WARPGROUP.DEPBAR.LE gsb0, N`'s N, the first wait for S alone
    (0x1: P V still in flight) and the first wait for all after it (0x0: P V done). Code between those two runs
    under P V."""
    waits = list(re.finditer(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", code))
    values = [w.group(1) for w in waits]
    after_s = next((w for w in waits if w.group(1) == "0x1"), None)
    assert after_s, f"no wait for S alone (0x1) among the waits {values}"
    end_pv = next((w for w in waits if w.start() > after_s.start() and w.group(1) == "0x0"), None)
    assert end_pv, f"no wait for P V (0x0) after the wait for S among {values}"
    return values, after_s, end_pv
