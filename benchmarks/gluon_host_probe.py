"""Host time per call of the Gluon attention demo and of its parts, in a plain process on a GPU (no harness):

    python3 benchmarks/gluon_host_probe.py [B H S D]      # default 2 8 2048 128, the GPU test's shape

The GPU test of tasks/demos/flash_attn_7_gluon.py said "host-bound: 242-285 us of host time per call against 60 us on
the GPU" at B2 H8 S2048 D128 (H100, 2026-12-05), where the tl.dot kernel it falls back to was not. Each row is the
median over 20 calls made while the GPU sleeps (torch.cuda._sleep), so only the host's part counts; then the GPU's
time per call (20 back to back), then where a Python profile of 200 calls puts the host's time (the 15 functions
with the most time of their own). Exploration only: the ladder's figures are `harness check`'s.
"""
from __future__ import annotations

import cProfile
import importlib.util
import io
import pstats
import sys
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from cuda_host_probe import host_us  # noqa: E402 - the same measure as the CUDA C++ gemm's probe


def main(argv: list[str]) -> None:
    B, H, S, D = (int(x) for x in argv) if len(argv) == 4 else (2, 8, 2048, 128)
    spec = importlib.util.spec_from_file_location("demo", ROOT / "tasks" / "demos" / "flash_attn_7_gluon.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for causal in (False, True):
        demo.kernel(q, k, v, causal)
        demo._attention_fa2(q, k, v, causal)
    torch.cuda.synchronize()
    q3 = q.view(B * H, S, D)
    layout = demo._smem_layout(1, 128, D)
    rows: dict[str, Callable[[], Any]] = {
        "whole kernel() (Gluon)": lambda: demo.kernel(q, k, v, False),
        "the tl.dot kernel (fa2)": lambda: demo._attention_fa2(q, k, v, False),
        "_hopper() check": lambda: demo._hopper(q, k, v),
        "torch.empty of O": lambda: torch.empty_like(q),
        "TensorDescriptor x4": lambda: [demo.TensorDescriptor.from_tensor(q3, [1, 128, D], layout) for _ in range(4)],
        "_attention_hopper()": lambda: demo._attention_hopper(q, k, v, False, BLOCK_N=demo.HOPPER_KEY_BLOCK[D]),
    }
    for name, fn in rows.items():
        print(f"{name:<28} {host_us(fn):8.1f} us host")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        demo.kernel(q, k, v, False)
    end.record()
    torch.cuda.synchronize()
    print(f"GPU per call (20 back to back) {start.elapsed_time(end) * 1000 / 20:.1f} us")
    profile = cProfile.Profile()
    profile.enable()
    for i in range(200):
        demo.kernel(q, k, v, False)
        if i % 10 == 9:
            torch.cuda.synchronize()  # the launch queue never fills: a full queue would be counted as host time
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())


if __name__ == "__main__":
    main(sys.argv[1:])
