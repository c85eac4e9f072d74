"""How the pipeline waits out a dead store: exponential backoff with jitter, forever.

A store that is down is not a reason to drop an event or to move past it: the
agent keeps retrying (the events stay unacknowledged, so a crash meanwhile means
redelivery, not loss) until the store answers or the worker is stopped. An error
that is about one event (bad data) is *not* retried; the caller isolates that event
and sends it to the dead-letter topic. An error that is neither — a defect in our
code — is retried ``Backoff.defect_attempts`` times, then raised as a
``CodeDefectError``, which stops the worker loudly (``streams/defects.py``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import psycopg
import psycopg_pool
import redis.exceptions
from aiokafka.errors import KafkaError

from memstream.embedder import EmbeddingError
from memstream.llm.base import LLMError
from streams.defects import CodeDefectError

log = logging.getLogger(__name__)
T = TypeVar("T")


class EventRejectedError(Exception):
    """A store refused one particular event (bad data), so retrying cannot help."""


def is_event_error(exc: BaseException) -> bool:
    """True when the error is about the data written, not the store's health."""
    if isinstance(exc, psycopg.errors.DataError | psycopg.errors.IntegrityError):
        return True
    if isinstance(exc, EmbeddingError | LLMError):
        return not exc.retryable
    return isinstance(exc, redis.exceptions.DataError | redis.exceptions.ResponseError) and (
        "script" not in str(exc).lower()
    )


def is_transient(exc: BaseException) -> bool:
    return isinstance(
        exc,
        psycopg.OperationalError
        | psycopg.InterfaceError
        | psycopg_pool.PoolTimeout
        | redis.exceptions.ConnectionError
        | redis.exceptions.TimeoutError
        | redis.exceptions.BusyLoadingError
        | EmbeddingError
        | LLMError
        | KafkaError
        | OSError
        | TimeoutError,
    )


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.2
    max_s: float = 10.0
    factor: float = 2.0
    #: Told of every failed attempt that will be retried (``what``, the error): the retry metric.
    on_retry: Callable[[str, BaseException], None] | None = field(default=None, compare=False, repr=False)
    #: Tries of an error that is neither transient nor about the data before it is a defect.
    defect_attempts: int = 5

    def delays(self) -> Iterator[float]:
        delay = self.initial_s
        while True:
            yield delay * random.uniform(0.5, 1.0)
            delay = min(delay * self.factor, self.max_s)


async def retry_until_done(
    op: Callable[[], Awaitable[T]],
    *,
    what: str,
    backoff: Backoff,
    where: str = "",
    fatal: tuple[type[BaseException], ...] = (),
) -> T:
    """Run ``op`` until it succeeds. Event errors raise EventRejectedError at once, errors
    of the ``fatal`` types propagate; transient errors are logged and retried after a growing
    delay, for as long as it takes; any other error is retried ``backoff.defect_attempts``
    times, then raised as a CodeDefectError."""
    attempt = 0
    defects = 0
    for delay in backoff.delays():
        attempt += 1
        try:
            return await op()
        except asyncio.CancelledError:
            raise
        except fatal:
            raise
        except Exception as exc:
            if is_event_error(exc):
                raise EventRejectedError(f"{what}: {type(exc).__name__}: {exc}") from exc
            transient = is_transient(exc)
            if not transient:
                defects += 1
                if defects >= backoff.defect_attempts:
                    raise CodeDefectError(what, where, defects, exc) from exc
            if backoff.on_retry is not None:
                backoff.on_retry(what, exc)
            level = logging.WARNING if transient else logging.ERROR
            log.log(
                level,
                "%s failed (attempt %d, %s): %s: %s; retrying in %.1f s",
                what,
                attempt,
                where or "-",
                type(exc).__name__,
                exc,
                delay,
                exc_info=level >= logging.ERROR,
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable: backoff delays never end")  # pragma: no cover
