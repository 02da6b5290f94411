"""Host time per call of the CUDA C++ wgmma gemm demo and of its parts, in a plain process on a GPU (no harness):

    python3 benchmarks/cuda_host_probe.py

Each row is the median over 20 calls made while the GPU sleeps (torch.cuda._sleep), so only the host's part counts;
the last line is the GPU's time per call, 20 calls back to back. Where the first row is above the last, a loop of
calls runs at the host's pace (the benchmark rung says "host-bound").
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rungs.backends import cuda_api  # noqa: E402


def host_us(fn: Callable[[], Any], calls: int = 20) -> float:
    times = []
    for _ in range(calls):
        torch.cuda._sleep(2_000_000)  # the GPU busy for about a millisecond: the call's host part alone
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
        torch.cuda.synchronize()
    return sorted(times)[calls // 2]


def main() -> None:
    spec = importlib.util.spec_from_file_location("demo", ROOT / "tasks" / "demos" / "gemm_cuda_5_wgmma.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    for _ in range(3):
        demo.kernel(a, b)
    torch.cuda.synchronize()
    map_a, map_b = cuda_api.tensor_map(a, (128, 64)), cuda_api.tensor_map(b, (64, 64))
    rows: dict[str, Callable[[], Any]] = {
        "whole kernel()": lambda: demo.kernel(a, b),
        "torch.empty": lambda: torch.empty((4096, 4096), dtype=a.dtype, device=a.device),
        "tensor_map x2 (cached)": lambda: (cuda_api.tensor_map(a, (128, 64)), cuda_api.tensor_map(b, (64, 64))),
        "tensor_map x2 (encode)": lambda: (cuda_api._encoded(a, "bfloat16", [8192], (128, 64), 128),
                                           cuda_api._encoded(b, "bfloat16", [8192], (64, 64), 128)),
        "launch only": lambda: cuda_api.launch(demo._wgmma, grid=(132,), block=(384,), shared_bytes=demo.SHARED_BYTES,
                                               args=(c, map_a, map_b, 4096, 4096, 4096)),
    }
    for name, fn in rows.items():
        print(f"{name:<26} {host_us(fn):8.1f} us host")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        demo.kernel(a, b)
    end.record()
    torch.cuda.synchronize()
    print(f"GPU per call (20 back to back) {start.elapsed_time(end) * 1000 / 20:.1f} us")


if __name__ == "__main__":
    main()
