"""A wall-time limit on a block of Python, raised into it by SIGALRM: the worker's build at the bench shapes
(rungs/worker/compile_phase.py) and a KernelBench problem file's load (harness/kernelbench.py) both run code that may
never return and must say so in one line instead of hanging."""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Callable, Iterator


@contextlib.contextmanager
def raised_after(limit_s: float, make: Callable[[], BaseException]) -> Iterator[None]:
    """`make()` raised in the block after `limit_s` of wall time (a Python loop sees it at its next bytecode, a sleep
    or a lock wait at once). Only the main thread receives signals: elsewhere the block runs without a limit. A timer
    set before it (pytest-timeout's) is given back afterwards, less the block's time."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise make()

    previous = signal.signal(signal.SIGALRM, expired)
    pending, _ = signal.setitimer(signal.ITIMER_REAL, limit_s)
    t0 = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:
            signal.setitimer(signal.ITIMER_REAL, max(pending - (time.monotonic() - t0), 1e-3))
