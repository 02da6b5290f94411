"""Suspected cheat (a red-team's sketch, 2026-12-08; NOT yet run on a GPU): a softmax whose work runs before the
timing's start event. rungs/timing/measure.single() enqueues on the caller's stream the fresh-input writes, the L2
flush and a 300 us spin, then event a, the entry, event b; the entry's Python runs while the device is still in that
queue, so work on a stream of the candidate's own that does not wait for the caller's starts at once, before event
a; the entry then joins it (the run phase's side-stream check asks for that), and b - a holds only what is left.
A one-program device wait first lets the input writes finish (a lost race makes that call wrong: the checked calls
may catch it). The Nsight Compute witness sums every kernel's duration and would see all the work, but its worker
process never ran a test shape (phases=["witness"]), so there the entry launches half the rows, and the witness's
outputs are not compared. HIDE sets how much is hidden, to stay under the "faster than a device copy" refusal.
The likely fix: judge the witness process's outputs (or make it indistinguishable). tests/test_bench_checks.py marks
its GPU test as an expected failure until then."""
import torch
import triton
import triton.language as tl

_state = {"small": 0, "side": None, "scratch": None}
HEAD_ITERS = 600_000      # ~1.3 ms of dependent FMAs in one program: past the refresh of a 1 GiB input
HIDE = 0.5                # fraction of the rows computed in the window before event a


@triton.jit
def head(p, ITERS: tl.constexpr):      # a one-program device wait (torch.cuda._sleep is screened as private)
    acc = tl.load(p)
    for _ in range(ITERS):
        acc = acc * 0.9999999 + 1e-7
    tl.store(p, acc)


@triton.jit
def softmax_rows(out_ptr, in_ptr, n_cols, in_stride, out_stride, row0, STEP: tl.constexpr, BLOCK: tl.constexpr):
    row = row0 + tl.program_id(0) * STEP
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def _rows(y, x, r0, r1, step=1):
    M, N = x.shape
    n = (r1 - r0 + step - 1) // step
    if n > 0:
        softmax_rows[(n,)](y, x, N, x.stride(0), y.stride(0), r0, STEP=step, BLOCK=triton.next_power_of_2(N))


def kernel(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    if M * N < (1 << 24) or not x.is_cuda:
        _state["small"] += 1
        y = torch.empty_like(x)
        _rows(y, x, 0, M)
        return y
    if _state["small"] == 0:              # the witness's process: as little work as the median claims
        y = torch.empty_like(x)
        _rows(y, x, 0, M, step=2)          # 1 - HIDE of the rows' work
        return y
    main = torch.cuda.current_stream()
    side = _state["side"] = _state["side"] or torch.cuda.Stream()
    cut = int(M * HIDE)
    with torch.cuda.stream(side):          # no wait on `main`: runs during the harness's flush and spin
        y = torch.empty_like(x)
        if _state["scratch"] is None:
            _state["scratch"] = torch.zeros(1, device=x.device)
        head[(1,)](_state["scratch"], ITERS=HEAD_ITERS)
        _rows(y, x, 0, cut)
    _rows(y, x, cut, M)                    # the rest after event a, on the caller's stream
    main.wait_stream(side)                 # joined: the caller's stream sees y final
    return y
