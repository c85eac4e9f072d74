"""The CPU time of one call, for the hang detectors (tests/unit/test_*_linear.py): bounds far
above what linear work costs and far below what superlinear work costs at the sizes they use.

What else runs in the test process must not count: after a thousand tests the process holds a
large heap and other threads (event loops, clients' I/O threads) of earlier tests: a redaction
that takes 0.02 s alone was measured at 0.60 s in process time late in a full run, and failed
its bound of 0.5 s. So this is the calling thread's CPU time (``time.thread_time``) with the
garbage collector held off during the call (it collects after, untimed), and a call over
``bound_s`` is measured twice more, its best time counting: a superlinear pass is slow every
time, one that met a collection or a busy machine is not.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

RETRIES = 2


def best_cpu_seconds(call: Callable[[], Any], *, bound_s: float) -> float:
    """``call``'s CPU seconds on this thread; its best of three when the first is ``bound_s`` or over."""
    best = _once(call)
    for _ in range(RETRIES):
        if best < bound_s:
            break
        best = min(best, _once(call))
    return best


def _once(call: Callable[[], Any]) -> float:
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        call()
        return time.thread_time() - started
    finally:
        if enabled:
            gc.enable()
