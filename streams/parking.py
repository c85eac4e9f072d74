"""The retry topic: turns whose fact extraction the LLM could not do yet wait there, not in the way.

The LLM client retries a rate limit or a timeout itself, a few times with backoff
(``MEMSTREAM_LLM_MAX_ATTEMPTS``). When those tries are spent, retrying the whole batch in
place would stall every later turn of its partitions behind one sick provider; instead the
batch's turns are *parked*: their original bytes go to ``memstream.retry.v1`` with the attempt
number, the reason and the time before which they are not tried again, and only once the
broker acknowledged that is the batch acknowledged. Nothing is dropped: the memory worker's
``retries`` agent waits out each record's time, extracts it again through the same stage,
and parks it once more (a longer wait, up to ``MAX_DELAY_S``) while the LLM still fails.

Ingestion (event log, episodes, buffers) and the read path never wait on the LLM: they are
the other consumer group. Facts of a parked turn arrive later than the ones after it; fact
ids are derived from the event id, so a parked turn that was also extracted (a redelivery)
is applied once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import faust

from memstream.llm.base import LLMError
from schemas import topics
from streams.decoding import Decoded
from streams.stages.base import SinkStage
from streams.stages.extract import EXTRACTED_ROLES

log = logging.getLogger(__name__)

ATTEMPT = "memstream.retry.attempt"
NOT_BEFORE = "memstream.retry.not_before"
REASON = "memstream.retry.reason"
MAX_DELAY_S = 300.0


def header(event: faust.EventT[bytes], name: str) -> bytes | None:
    """A header of the record ``event`` came in (Faust gives a list of pairs or a mapping)."""
    headers: Any = event.message.headers or ()
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in pairs:
        if key == name:
            return bytes(value) if value is not None else None
    return None


def attempt_of(event: faust.EventT[bytes]) -> int:
    """How many times this turn was parked before (0: it came from the turns topic)."""
    raw = header(event, ATTEMPT)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def delay_for(attempt: int, base_s: float) -> float:
    """Seconds before the ``attempt``-th try (1, 2, …): doubling from ``base_s``, capped."""
    return min(MAX_DELAY_S, base_s * 2.0 ** (attempt - 1))


class RetryParking:
    """Sends turns to ``memstream.retry.v1`` and waits for the broker to acknowledge."""

    def __init__(self, topic: faust.TopicT, *, base_delay_s: float) -> None:
        self.topic = topic
        self.base_delay_s = base_delay_s
        self.parked = 0

    async def park(self, batch: Sequence[Decoded], *, reason: str) -> None:
        acks = []
        for item in batch:
            message = item.event.message
            attempt = attempt_of(item.event) + 1
            not_before = time.time() + delay_for(attempt, self.base_delay_s)
            headers = {
                ATTEMPT: str(attempt).encode(),
                NOT_BEFORE: f"{not_before:.3f}".encode(),
                REASON: reason.encode("utf-8", "replace")[:2000],
                topics.DLQ_SOURCE_TOPIC: message.topic.encode(),
                topics.DLQ_SOURCE_PARTITION: str(message.partition).encode(),
                topics.DLQ_SOURCE_OFFSET: str(message.offset).encode(),
            }
            value = message.value if isinstance(message.value, bytes) else b""
            key = message.key if isinstance(message.key, bytes) else None
            # The original's time is when memstream received the turn (``received_at``): kept.
            acks.append(await self.topic.send(key=key, value=value, headers=headers, timestamp=message.timestamp))
        for ack in acks:
            await ack
        self.parked += len(batch)
        log.warning(
            "parked %d turn(s) on %s for a later extraction (%s); first %s",
            len(batch), topics.RETRY, reason, batch[0].turn.event_id,
        )  # fmt: skip


class ParkingExtraction(SinkStage):
    """The extraction stage, parking its batch on the retry topic when the LLM stays unavailable."""

    def __init__(self, stage: SinkStage, parking: RetryParking) -> None:
        self.stage = stage
        self.parking = parking
        self.name = stage.name

    async def write(self, batch: Sequence[Decoded]) -> None:
        try:
            await self.stage.write(batch)
        except LLMError as exc:
            if not exc.retryable:
                raise
            extracted = [item for item in batch if item.turn.role in EXTRACTED_ROLES]
            if extracted:
                await self.parking.park(extracted, reason=f"{exc.kind}: {exc}")


async def wait_until_due(batch: Sequence[Decoded]) -> None:
    """Sleep until the last parked turn of the batch is due (they were parked in order)."""
    due = [float(raw) for item in batch if (raw := header(item.event, NOT_BEFORE)) is not None]
    wait_s = max(due, default=0.0) - time.time()
    if wait_s > 0:
        await asyncio.sleep(min(wait_s, MAX_DELAY_S))


def retry_topic(app: faust.App, *, partitions: int) -> faust.TopicT:
    return app.topic(
        topics.RETRY, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
        partitions=partitions,
    )  # fmt: skip
