"""One guarded call of the entry (`call_entry`): the torch-op trace and the tamper checks around it (`Watch`), then on
CUDA the side-stream check (the outputs copied on the caller's stream the moment the entry returns must match them
after a device-wide synchronize), then the output size limit; and how the outputs are saved for the parent.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rungs.worker.hot_path import ALLOWED_OPS, TorchComputeRefused, host_mode, refused_error, trace_mode
from rungs.worker.job import OUTPUT_BYTES_FACTOR, Job
from rungs.worker.tamper import Snapshot, Tampered, armed, check


class OutputTooLarge(RuntimeError):
    """An output far larger than the task's: refused before it is copied or saved."""


class SideStreamNotJoined(RuntimeError):
    """The output was still being written when the entry returned."""


GUARD_ERRORS = (Tampered, TorchComputeRefused, OutputTooLarge, SideStreamNotJoined)


class Watch:
    """One call of the entry: the torch-op trace, then the tamper checks; on CUDA, `settled` synchronizes."""

    def __init__(self, allow_torch_compute: bool, on_cuda: bool) -> None:
        self.allow = allow_torch_compute
        self.on_cuda = on_cuda
        self.refused: list[str] = []
        self.stream: Any = None
        self.flags: tuple[bool, bool] | None = None
        self.early: list[Any] = []

    def __enter__(self) -> "Watch":
        import torch

        self.flags = _determinism()
        # Compared with the state at entry, not at arm(): the worker's own determinism re-run swaps torch.empty.
        self.before = Snapshot() if armed() else None
        if self.on_cuda:
            self.stream = torch.cuda.current_stream()
        self.host = None if self.allow else host_mode(self.refused)
        self.mode = None if self.allow else trace_mode(ALLOWED_OPS, self.refused)
        if self.host is not None:
            self.host.__enter__()
        if self.mode is not None:
            self.mode.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.mode is not None:
            self.mode.__exit__(exc_type, exc, tb)
        if self.host is not None:
            self.host.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return
        if self.refused:  # the candidate caught the refusal and carried on
            raise refused_error(self.refused)
        if _determinism() != self.flags:
            raise Tampered("the kernel turned off deterministic mode or torch.utils.deterministic."
                           "fill_uninitialized_memory: the NaN poison that shows unwritten outputs")
        if self.before is not None:
            check("during a call of the entry", self.before)

    def returned(self, outputs: list[Any]) -> list[Any]:
        """Called the moment the entry returns, inside the `with`: on CUDA, copies the outputs on the caller's
        stream at once. The tamper checks on exit take milliseconds of host time, long enough for work on a side
        stream to finish before a later copy (seen on the H200: a 20000-step spin went unnoticed)."""
        if self.on_cuda:
            import torch

            with torch.cuda.stream(self.stream):  # the caller's stream, even if the entry switched streams
                self.early = [o.clone() if type(o) is torch.Tensor and o.is_cuda else None for o in outputs]
        return outputs

    def settled(self, outputs: list[Any]) -> None:
        """On CUDA: the outputs as the caller's stream saw them when the entry returned must be final."""
        if not self.on_cuda:
            return
        import torch

        torch.cuda.synchronize()
        for i, (a, o) in enumerate(zip(self.early, outputs)):
            if a is not None and not same_bits(a, o):
                raise SideStreamNotJoined(
                    f"output {i} was still being written after the entry returned: work on a side stream that the "
                    "caller's stream does not wait for (join it with current_stream().wait_stream(side))")


def watch(job: Job, on_cuda: bool) -> Watch:
    return Watch(job.allow_torch_compute, on_cuda)


def call_entry(fn: Callable[..., Any], inputs: list[Any], job: Job, on_cuda: bool,
               max_output_bytes: int | None) -> list[Any]:
    """One guarded call of the entry: the torch-op trace and tamper checks around it, then (CUDA) the side-stream
    check, then the output size limit. Returns the outputs."""
    import torch

    with torch.no_grad(), watch(job, on_cuda) as w:
        outputs = w.returned(as_outputs(fn(*inputs)))  # CUDA: copied at once, for settled()
    w.settled(outputs)  # CUDA: synchronizes, then refuses an output a side stream was still writing
    check_output_size(outputs, max_output_bytes)
    return outputs


def save_outputs(outputs: list[Any], path: Path) -> None:
    """Copied to the CPU for the parent to compare; anything but a plain tensor is saved as None (the parent
    refuses it from the run phase's description of the outputs)."""
    import torch

    torch.save([o.detach().to("cpu").clone() if type(o) is torch.Tensor else None for o in outputs], path)


def _determinism() -> tuple[bool, bool]:
    import torch
    import torch.utils.deterministic

    return torch.are_deterministic_algorithms_enabled(), bool(torch.utils.deterministic.fill_uninitialized_memory)


def as_outputs(result: Any) -> list[Any]:
    """The entry's result as a list of outputs (a tuple or list is several)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]


def same_bits(a: Any, b: Any) -> bool:
    import torch

    if not isinstance(a, torch.Tensor):
        return True
    return a.reshape(-1).contiguous().view(torch.uint8).equal(b.reshape(-1).contiguous().view(torch.uint8))


# ---- outputs -------------------------------------------------------------------------------------------------
def check_output_size(outputs: list[Any], limit: int | None) -> None:
    """Refuse an output far larger than expected before it is copied or saved (a view of a huge tensor counts
    at its own size; an expanded one at its logical size, which the copy would allocate)."""
    import torch

    if not limit:
        return
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            nbytes = o.numel() * o.element_size()
            if nbytes > limit:
                raise OutputTooLarge(f"output {i} has shape {list(o.shape)} ({_human(nbytes)}), over "
                                     f"{OUTPUT_BYTES_FACTOR}x the expected output ({_human(limit)} allowed): "
                                     "refused before copying or saving it")


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
