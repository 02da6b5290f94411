"""What a launcher asks torch about the GPU, answered on a machine with none, for a compile-only phase.

A candidate's entry asks for the stream to launch on (`torch.cuda.current_stream().cuda_stream`) and sizes its
grid by the device (`torch.cuda.get_device_properties(dev).multi_processor_count`) before it compiles. On a CPU
the compile phase builds for sm_90a (the H200) without running anything, so these questions get the H200's
answers and a null stream, only while the compile capture is installed (Triton's counterpart is the stand-in
driver in rungs/backends/triton_worker). Nothing launches on that stream: the capture turns launches into
records. Kept free of the harness's imports: it runs in the worker.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

H200 = SimpleNamespace(
    name="NVIDIA H200 (compile only: no GPU on this machine)", major=9, minor=0, multi_processor_count=132,
    total_memory=150_754_820_096, max_threads_per_multi_processor=2048, warp_size=32,
    regs_per_multiprocessor=65536, shared_memory_per_block=49152, shared_memory_per_block_optin=232448,
    shared_memory_per_multiprocessor=233472, L2_cache_size=62_914_560, is_integrated=False,
    is_multi_gpu_board=False, gcnArchName="sm_90a", uuid="compile-only")
"""torch.cuda.get_device_properties(0) on the H200 the kernels are built for (torch 2.11, 2026-11-30)."""


class NullStream:
    """Stands in for torch.cuda.Stream: `cuda_stream` 0, what a launcher hands to the driver as its stream."""

    cuda_stream = 0
    device_index = 0
    device = SimpleNamespace(type="cuda", index=0)

    def synchronize(self) -> None:
        return None

    def wait_stream(self, other: Any) -> None:
        return None


def install() -> Callable[[], None]:
    """Answer the host queries as the H200 would; returns the undo."""
    import torch

    cuda = torch.cuda
    names = ("current_stream", "default_stream", "get_device_properties", "current_device", "get_device_capability",
             "synchronize")
    saved = {n: getattr(cuda, n) for n in names}
    stream = NullStream()
    cuda.current_stream = lambda device=None: stream  # type: ignore[assignment]
    cuda.default_stream = lambda device=None: stream  # type: ignore[assignment]
    cuda.get_device_properties = lambda device=None: H200  # type: ignore[assignment]
    cuda.current_device = lambda: 0  # type: ignore[assignment]
    cuda.get_device_capability = lambda device=None: (H200.major, H200.minor)  # type: ignore[assignment]
    cuda.synchronize = lambda device=None: None  # type: ignore[assignment]

    def restore() -> None:
        for n, f in saved.items():
            setattr(cuda, n, f)
    return restore
