"""The hang detectors' clock (tests/cpu_time.py): a call slow every time stays slow, a call
slow once (a collection, a busy machine) is measured again and passes."""

import time

from tests.cpu_time import best_cpu_seconds


def _spin(seconds: float) -> None:
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        pass


def test_a_call_slow_every_time_is_over_its_bound() -> None:
    calls = []

    def slow() -> None:
        calls.append(1)
        _spin(0.06)

    assert best_cpu_seconds(slow, bound_s=0.05) >= 0.05
    assert len(calls) == 3


def test_a_call_slow_once_is_measured_again() -> None:
    calls = []

    def slow_first() -> None:
        calls.append(1)
        if len(calls) == 1:
            _spin(0.06)

    assert best_cpu_seconds(slow_first, bound_s=0.05) < 0.05
    assert len(calls) == 2


def test_a_fast_call_is_measured_once() -> None:
    calls = []
    assert best_cpu_seconds(lambda: calls.append(1), bound_s=0.05) < 0.05
    assert calls == [1]
