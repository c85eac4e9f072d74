"""A code defect is loud and bounded, never a silent stall.

``retry_until_done`` retries a store that is down for as long as it takes: nothing accepted
may be lost. An error that is neither a store being down nor bad data — a ``TypeError``, a
``KeyError``: a defect in our code — used to be retried the same way, forever, while the
partition stopped moving and the log filled. Now, after ``defect_attempts`` tries, it raises
:class:`CodeDefectError`; the consume loop (``streams/consume.py``) then records what failed
in Redis (the gateway's ``/readyz/workers`` reports it, the next incarnation's ``/metrics`` shows
it), logs it, and exits the worker with status ``EXIT_DEFECT`` (70, EX_SOFTWARE) without
acknowledging the batch: the batch is consumed again after the restart. ``memstream up``
restarts the worker with backoff and says why it died; if the defect is still there it gives
up after five deaths, as for any crash loop.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime
from typing import NoReturn

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from sinks.redis.keys import defect_key
from streams.metrics import WorkerMetrics

log = logging.getLogger(__name__)

#: The exit status of a worker stopped by a code defect (sysexits' EX_SOFTWARE).
EXIT_DEFECT = 70
#: How long the record of a defect stays in Redis when no worker clears it.
RECORD_TTL_S = 86_400


class CodeDefectError(Exception):
    """An operation failed the same non-transient way ``attempts`` times: a defect, not an outage."""

    def __init__(self, what: str, where: str, attempts: int, cause: BaseException) -> None:
        super().__init__(f"{what} ({where or '-'}) failed {attempts} times: {type(cause).__name__}: {cause}")
        self.what = what
        self.where = where
        self.attempts = attempts
        self.cause = cause


def first_defect(group: BaseExceptionGroup[CodeDefectError]) -> CodeDefectError:
    """The first defect of an exception group (concurrent stages may fail together)."""
    for exc in group.exceptions:
        if isinstance(exc, CodeDefectError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            return first_defect(exc)
    raise AssertionError("an exception group of code defects holds none")  # pragma: no cover


class Defects:
    """What one worker (consumer group ``app_id``) knows about code defects."""

    def __init__(self, client: aioredis.Redis, app_id: str, metrics: WorkerMetrics) -> None:
        self.client = client
        self.app_id = app_id
        self.metrics = metrics
        self._looked = False
        self._open: dict[str, object] | None = None

    async def stop_worker(self, exc: CodeDefectError, *, consumer: str) -> NoReturn:
        """Record the defect (in ``consumer``, the loop that met it), log it and exit (status 70)
        with the batch unacknowledged."""
        record = {
            "consumer": consumer, "what": exc.what, "where": exc.where, "attempts": exc.attempts,
            "error": f"{type(exc.cause).__name__}: {exc.cause}", "at": datetime.now(UTC).isoformat(),
            "pid": os.getpid(),
        }  # fmt: skip
        try:
            await self.client.set(defect_key(self.app_id), orjson.dumps(record), ex=RECORD_TTL_S)
        except RedisError as redis_error:
            log.error("could not record the code defect in Redis: %s", redis_error)
        log.critical(
            "code defect in %s (%s): %s: %s — stopping this worker (exit status %d); the batch was not "
            "acknowledged and is consumed again after the restart",
            exc.what, exc.where or "-", type(exc.cause).__name__, exc.cause, EXIT_DEFECT, exc_info=exc.cause,
        )  # fmt: skip
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_DEFECT)

    async def look(self) -> None:
        """Once per process, before the first batch: a defect an earlier incarnation recorded
        is shown in ``memstream_code_defect`` until a batch goes through."""
        if self._looked:
            return
        self._looked = True
        try:
            self._open = await recorded_defect(self.client, self.app_id)
        except RedisError as exc:
            log.warning("could not read the record of a code defect: %s", exc)
            return
        if self._open is not None:
            self.metrics.code_defect.labels(**_labels(self._open)).set(_unix_time(self._open))
            log.warning("restarted after a code defect in %s (%s): %s", self._open.get("consumer"),
                        self._open.get("what"), self._open.get("error"))  # fmt: skip

    async def batch_done(self, consumer: str) -> None:
        """A batch of ``consumer`` went through: a defect an earlier incarnation met there is over."""
        if self._open is None or self._open.get("consumer") != consumer:
            return
        record, self._open = self._open, None
        self.metrics.code_defect.remove(*_labels(record).values())
        try:
            await self.client.delete(defect_key(self.app_id))
        except RedisError as exc:
            log.warning("could not clear the record of a code defect: %s", exc)
        log.warning("recovered: a batch went through after the code defect in %s (%s)", record.get("what"),
                    record.get("error"))  # fmt: skip


def _labels(record: dict[str, object]) -> dict[str, str]:
    return {"operation": str(record.get("what", "")), "error": str(record.get("error", "")).split(":", 1)[0]}


def _unix_time(record: dict[str, object]) -> float:
    try:
        return datetime.fromisoformat(str(record.get("at"))).timestamp()
    except ValueError:
        return 0.0


async def recorded_defect(client: aioredis.Redis, app_id: str) -> dict[str, object] | None:
    """The code defect that stopped a worker of ``app_id`` and is not yet cleared, if any."""
    raw = await client.get(defect_key(app_id))
    return orjson.loads(raw) if raw else None
