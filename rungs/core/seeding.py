"""torch.manual_seed for the generators this harness draws from, at a thousandth of its cost.

`torch.manual_seed(seed)` seeds the CPU's generator and queues the same seed for CUDA, MPS, XPU and MTIA, each queued
call with `traceback.format_stack()` of the caller (kept to say where a lazy call came from if that device's start
fails); after torch._dynamo is imported it also runs through dynamo's disable wrapper. 0.3 ms a call at a stack ten
frames deep, 1.5 ms at sixty with dynamo imported (this project's 2-core CPU), against 1.5 us for the generator
itself. A KernelBench problem's shapes are sized by running it on the meta device, a seed a run: `load_task` of the
test suite's 26 problem files seeded 6723 times, about 10 CPU-s of it in stack captures.

Here: the CPU's default generator, and CUDA's where this torch has CUDA (queued as torch queues it when CUDA has not
started: what a KernelBench problem's `get_inputs` draws on the GPU is drawn from the same seed). Every generator a
draw here can reach is seeded as torch.manual_seed seeds it; the harness never draws on MPS, XPU or MTIA.
"""
from __future__ import annotations

import torch


def manual_seed(seed: int) -> None:
    """Seed the CPU's default generator and every CUDA device's, as torch.manual_seed does for those."""
    seed = int(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)  # queued until CUDA starts, as torch.manual_seed queues it
    torch.random.default_generator.manual_seed(seed)
