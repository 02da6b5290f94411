"""What an L2 persisting window buys a candidate past the timing's flush, and what resetting persisting lines
before each flush (cuCtxResetPersistingL2Cache, which rungs/timing/devices.py does not do) would cost honest timings.
GPU machine only. Prints, with the flush alone / reset then flush / reset, synchronize, flush: the runtime and the
end-of-region gaps of torch.softmax on 8192^2 fp32, and of a 16 MiB sum without and with the window
(tests/adversarial/gpu_l2_persist_libcuda.py).
    python3 benchmarks/l2_persist_probe.py
"""
from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rungs.timing.devices import CudaDevice  # noqa: E402
from rungs.timing.measure import TimingConfig, measure  # noqa: E402
from rungs.core.imports import import_file  # noqa: E402


class ResetFirst(CudaDevice):
    synchronize = False

    def flush(self) -> None:
        _reset()
        if self.synchronize:
            torch.cuda.synchronize()
        super().flush()


class ResetSyncFirst(ResetFirst):
    synchronize = True


def _reset() -> None:
    rc = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache()
    assert rc == 0, f"cuCtxResetPersistingL2Cache returned CUresult {rc}"


def main() -> None:
    cheat = import_file(ROOT / "tests" / "adversarial" / "gpu_l2_persist_libcuda.py")
    torch.zeros(1, device="cuda")  # a current context for the driver calls below
    lib = ctypes.CDLL("libcuda.so.1")
    print("max persisting L2 bytes", cheat._attribute(lib, 108), "max window bytes", cheat._attribute(lib, 109),
          "L2 bytes", torch.cuda.get_device_properties(0).L2_cache_size)
    reset = _reset
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(100):
        reset()
    idle_us = (time.perf_counter() - t0) * 1e4
    torch.cuda._sleep(50_000_000)  # tens of ms of device work
    t0 = time.perf_counter()
    reset()
    busy_us = (time.perf_counter() - t0) * 1e6
    torch.cuda.synchronize()
    print(f"reset call: {idle_us:.1f} us on an idle device, {busy_us:.1f} us behind a long kernel")

    big = torch.randn(8192, 8192, device="cuda")
    small = torch.randn(4 << 20, device="cuda")

    def pinned(t):
        cheat.persist(t)
        return t.sum()

    rows = []
    cfg = TimingConfig(graph_under_us=0.0, sets=1)  # one input set: only the flush stands in the way
    for label, cls in (("flush", CudaDevice), ("reset", ResetFirst), ("reset+sync", ResetSyncFirst)):
        row = [label]
        for fn, x in ((lambda t: torch.softmax(t, -1), big), (lambda t: t.sum(), small), (pinned, small)):
            with torch.cuda.stream(torch.cuda.Stream()):
                r = measure(fn, [x], cls(cfg), cfg)
            row.append(f"{r['runtime_us']:.2f} (gap {r['end_gap_us']:.1f}/{r['idle_gap_us']:.1f}"
                       f"{' SIDE' if r['side_stream'] else ''})")
        rows.append(row)
    print(f"{'before':10} {'softmax 8192^2 us (end/idle gap)':38} {'sum 16 MiB':30} {'sum 16 MiB, window':30}")
    for row in rows:
        print(f"{row[0]:10} {row[1]:38} {row[2]:30} {row[3]:30}")


if __name__ == "__main__":
    main()
