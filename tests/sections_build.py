"""Build a Triton kernel file ahead of time for sm_90a through the worker's own compile capture, and write each
kernel's cubin and PTX: `python tests/sections_build.py OUT_DIR KERNEL.py...` (OUT_DIR/<i>/ for the i-th file). tests/test_sections.py compares the
builds of a marked kernel and its unmarked original (in a process of its own: the stand-in driver stays set)."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from rungs.backends.triton_worker import WORKER
from rungs.worker.compile_phase import Launches
from rungs.worker.candidate import load_candidate


def build(kernel: Path, out: Path) -> None:
    """One flash-attention file at one small shape (non-causal: one specialization)."""
    launches = Launches()
    restore = WORKER.install_compile_capture(False, launches)
    fn = load_candidate(str(kernel), "kernel")
    q, k, v = (torch.randn(1, 2, 200, 64, dtype=torch.bfloat16) for _ in range(3))
    fn(q, k, v, False)
    restore()
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, compiled, _) in enumerate(launches.compiled):
        (out / f"{name}.{i}.cubin").write_bytes(compiled.asm["cubin"])
        (out / f"{name}.{i}.ptx").write_text(compiled.asm["ptx"])


if __name__ == "__main__":
    for n, path in enumerate(sys.argv[2:]):
        build(Path(path), Path(sys.argv[1]) / str(n))
