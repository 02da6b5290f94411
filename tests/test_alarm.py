"""rungs/core/alarm.raised_after: the wall-time limit the worker's bench-shape build and a KernelBench problem's load
share."""
from __future__ import annotations

import signal
import threading
import time

import pytest

from rungs.core.alarm import raised_after


class Late(BaseException):
    pass


def test_a_block_past_its_limit_gets_the_exception_even_through_except_exception():
    before, _ = signal.getitimer(signal.ITIMER_REAL)  # pytest-timeout's, where it runs with signals
    t0 = time.monotonic()
    with pytest.raises(Late):
        with raised_after(0.2, Late):
            try:
                while True:
                    pass
            except Exception:  # a BaseException passes the code's own handler
                pass
    assert time.monotonic() - t0 < 5
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert left == 0.0 if before == 0.0 else 0 < left <= before  # its own timer gone, any earlier one given back


def test_a_timer_set_before_is_given_back_and_still_fires():
    fired: list[float] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(time.monotonic()))
    try:
        t0 = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with raised_after(5, Late):
            time.sleep(0.2)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 0.45
        time.sleep(1.0)
        assert len(fired) == 1 and 0.5 < fired[0] - t0 < 1.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_the_block_runs_without_a_limit():
    done: list[bool] = []

    def body() -> None:
        with raised_after(0.05, Late):
            time.sleep(0.2)
        done.append(True)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(5)
    assert done == [True]
