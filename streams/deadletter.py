"""The dead-letter topic: the original bytes of a record we cannot process, and why."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import faust

from schemas import topics
from schemas.errors import DecodeError
from streams.metrics import WorkerMetrics

log = logging.getLogger(__name__)


class DeadLetters:
    """Sends records to ``memstream.dlq.v1`` and waits for the broker to acknowledge."""

    def __init__(self, topic: faust.TopicT, *, metrics: WorkerMetrics | None = None) -> None:
        self.topic = topic
        self.metrics = metrics
        self.sent = 0

    async def send(self, event: faust.EventT[bytes], *, reason: str, error: str, stage: str) -> None:
        message = event.message
        headers = {
            topics.DLQ_REASON: reason.encode("utf-8", "replace")[:4000],
            topics.DLQ_ERROR: error.encode(),
            topics.DLQ_STAGE: stage.encode(),
            topics.DLQ_SOURCE_TOPIC: message.topic.encode(),
            topics.DLQ_SOURCE_PARTITION: str(message.partition).encode(),
            topics.DLQ_SOURCE_OFFSET: str(message.offset).encode(),
            topics.DLQ_FAILED_AT: datetime.now(UTC).isoformat().encode(),
        }
        value = message.value if isinstance(message.value, bytes) else b""
        key = message.key if isinstance(message.key, bytes) else None
        log.warning(
            "dead-lettering %s[%d]@%d at %s: %s",
            message.topic,
            message.partition,
            message.offset,
            stage,
            reason,
        )
        # The original's time is when memstream received it (``received_at``): kept for a replay.
        pending = await self.topic.send(key=key, value=value, headers=headers, timestamp=message.timestamp)
        await pending
        self.sent += 1
        if self.metrics is not None:
            self.metrics.dead_letters.labels(stage=stage, error=error).inc()


async def decode_or_dead_letter(
    events: Sequence[faust.EventT[bytes]],
    decode: Callable[[bytes], dict[str, Any]],
    dead_letters: DeadLetters,
    *,
    stage: str,
) -> list[dict[str, Any]]:
    """The records of a batch that decode; the others go to the DLQ with their reason."""
    records = []
    for event in events:
        raw = event.message.value
        try:
            records.append(decode(raw if isinstance(raw, bytes) else b""))
        except DecodeError as exc:
            await dead_letters.send(event, reason=exc.reason, error="DecodeError", stage=stage)
    return records
