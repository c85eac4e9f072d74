"""When a failed request is tried again, and after how long.

- Nothing was sent (the connection could not be made): always safe, any operation.
- 429: the gateway refused before doing anything: any operation.
- 502, 503, 504, a timeout or a connection lost mid-request: the request may have reached the
  gateway and done its work, so only operations that are safe to repeat are retried — reads,
  PUT and DELETE, and the two writes made idempotent by their event ids (``turns.publish`` and
  ``tool_events.record``, which send the same ids on every attempt).

The wait is the answer's ``Retry-After`` (seconds or an HTTP date) when it has one, else an
exponential backoff with full jitter: uniform in ``[0, min(cap, base * 2**attempt))``. A
``Retry-After`` longer than ``max_retry_after_s`` is not slept through: the error is raised at
once (a ``RateLimitError`` carries ``retry_after``), so that no call blocks for minutes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

#: Statuses worth another attempt (429 for any operation, the others for idempotent ones).
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Statuses that say the request was refused before any work was done.
NOT_PROCESSED_STATUSES = frozenset({429})
#: Transport failures before anything was sent.
NOT_SENT_ERRORS: tuple[type[httpx.TransportError], ...] = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Transport failures after the request may have been sent.
MAYBE_SENT_ERRORS: tuple[type[httpx.TransportError], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


@dataclass(frozen=True)
class RetryPolicy:
    base_s: float = 0.5
    cap_s: float = 8.0
    max_retry_after_s: float = 60.0
    #: Uniform in [0, 1): the jitter (replaceable for tests).
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def backoff_s(self, attempt: int) -> float:
        """The wait before retry number ``attempt + 1`` (``attempt`` 0 is the first failure)."""
        return self.jitter() * min(self.cap_s, self.base_s * 2.0**attempt)


DEFAULT_POLICY = RetryPolicy()


def status_retryable(status_code: int, *, idempotent: bool) -> bool:
    if status_code not in RETRY_STATUSES:
        return False
    return idempotent or status_code in NOT_PROCESSED_STATUSES


def failure_retryable(exc: httpx.TransportError, *, idempotent: bool) -> bool:
    if isinstance(exc, NOT_SENT_ERRORS):
        return True
    return idempotent and isinstance(exc, MAYBE_SENT_ERRORS)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait by a ``Retry-After`` header: delta-seconds, or an HTTP date (counted
    from ``now``, the clock by default; a past date is 0). None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is in GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
