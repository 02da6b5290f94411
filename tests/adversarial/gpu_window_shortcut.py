"""Cheat (a red-team's, 2026-12-08): right at the test shapes and for the bench shape's first call and 500 warm-up
calls, then wrong (odd rows skipped, half the work) on the first ~55% of the timed calls, by count and by its own
clock (bimodal samples never meet rel_se: timing runs to max_reps or the time cap), right for the tail, where the
ring of coin picks and the always-judged latest pick lie; always fast in a process that never saw a test shape (the
Nsight Compute witness), so the witness agrees with the fast median. The timed reservoir (job.TIMED_KEPT) judges 8
calls uniform over the timed ones: it escaped 61-75% of climbs before, in the simulation of tests/test_bench_checks.py."""
import time

import torch
import triton
import triton.language as tl

_state = {"small": 0, "n": 0, "t0": 0.0}
WARMUP = 501          # first call + 500 warm-up calls (a kernel under 400 us)
WRONG_MAX = 1100      # of at most 2000 timed calls
WRONG_S = 1.6         # of the 3 s cap on timed samples


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_stride, out_stride, STEP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0) * STEP
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    wrong = False
    if M * N < (1 << 24):
        _state["small"] += 1
    elif _state["small"] == 0:
        wrong = True                      # the witness worker: fast on every call
    else:
        _state["n"] += 1
        n = _state["n"]
        if n == WARMUP + 1:
            _state["t0"] = time.perf_counter()
        if n > WARMUP:
            wrong = n - WARMUP <= WRONG_MAX and time.perf_counter() - _state["t0"] < WRONG_S
    step = 2 if wrong else 1
    softmax_kernel[((M + step - 1) // step,)](y, x, N, x.stride(0), y.stride(0), STEP=step,
                                              BLOCK=triton.next_power_of_2(N))
    return y
