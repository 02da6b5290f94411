"""An attention demo beside cuDNN's and FlashAttention-2's SDPA in one process, on a GPU (no harness):

    python3 benchmarks/attention_vs_cudnn.py [DEMO.py ...]      # default: tasks/demos/flash_attn_cuda_7_overlap.py
    ATTN_SHAPES=4x32x4096x128,4x8x4096x256 python3 benchmarks/attention_vs_cudnn.py DEMO.py   # only these B x H x S x D

Per demo and shape (bf16, [B, H, S, D]; non-causal and causal): the demo's largest error against SDPA, then its
time and TFLOP/s and SDPA's with the cuDNN and the flash backends, by CUDA events over 20 calls after 3 warm-up
calls, the three interleaved per round (3 rounds, or ATTN_ROUNDS; median) so that the GPU's clock drifts alike for all. The
ladder's own figures (`harness check tasks/flash_attn_cuda.yaml DEMO`) time the demo alone, with fresh inputs a
call; this script is for the comparison the task's description quotes.
"""
from __future__ import annotations

import importlib.util
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHAPES = [(4, 32, 4096, 128), (8, 16, 8192, 128), (4, 32, 4096, 64), (4, 8, 4096, 256)]
"""B, H, S, D: the head-dim-128 task's bench shape and a longer one, then tasks/flash_attn_d64.yaml's and
tasks/flash_attn_d256.yaml's."""
if os.environ.get("ATTN_SHAPES"):  # a DSL whose every shape compiles apart (CuTe DSL, TileLang): fewer shapes, less time
    SHAPES = [tuple(int(n) for n in s.split("x")) for s in os.environ["ATTN_SHAPES"].split(",")]  # type: ignore[misc]


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_us(fn: Callable[[], Any], calls: int = 20) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls * 1e3


def backend(which: SDPBackend, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> Callable[[], Any]:
    def call() -> Any:
        with sdpa_kernel(which):
            return sdpa(q, k, v, is_causal=causal)
    return call


def measure(demo: Any, B: int, H: int, S: int, D: int, causal: bool) -> tuple[float, dict[str, float]]:
    """The demo's largest error against cuDNN's SDPA, and TFLOP/s per contender."""
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    calls = {"demo": lambda: demo.kernel(q, k, v, causal),
             "cudnn": backend(SDPBackend.CUDNN_ATTENTION, q, k, v, causal),
             "flash2": backend(SDPBackend.FLASH_ATTENTION, q, k, v, causal)}
    try:
        err = (calls["demo"]().float() - calls["cudnn"]().float()).abs().max().item()
    except Exception as exc:  # noqa: BLE001 - a demo written for one head dim (the CUDA C++ ones: 128): cuDNN and FA2 alone
        print(f"{getattr(demo, '__name__', 'demo')} at {B}x{H}x{S}x{D}: {type(exc).__name__}: {str(exc)[:120]}")
        del calls["demo"]
        err = float("nan")
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(int(os.environ.get("ATTN_ROUNDS", "3"))):  # more rounds: variants a few % apart told apart
        for name, fn in calls.items():
            times[name].append(time_us(fn))
    flops = 4 * B * H * S * S * D * (0.5 if causal else 1)
    tf = {name: flops / statistics.median(t) / 1e6 for name, t in times.items()}
    return err, {"demo": float("nan"), **tf}


def main(demos: list[Path]) -> None:
    rows = []
    for path in demos:
        demo = load(path)
        for B, H, S, D in SHAPES:
            for causal in (False, True):
                err, tf = measure(demo, B, H, S, D, causal)
                rows.append((path.stem, f"{B}x{H}x{S}x{D}", "causal" if causal else "full", err, tf))
                print("measured:", *rows[-1][:4], {k: round(v, 1) for k, v in tf.items()}, flush=True)  # a cut run keeps these
    print(f"{'demo':<28} {'shape':<16} {'mask':<7} {'max err':>8} {'demo TF':>8} {'cuDNN TF':>9} {'FA2 TF':>7} {'vs cuDNN':>9}")
    for name, shape, mask, err, tf in rows:
        print(f"{name:<28} {shape:<16} {mask:<7} {err:>8.4f} {tf['demo']:>8.1f} {tf['cudnn']:>9.1f} {tf['flash2']:>7.1f}"
              f" {tf['demo'] / tf['cudnn']:>8.2f}x")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]] or [ROOT / "tasks/demos/flash_attn_cuda_7_overlap.py"])
