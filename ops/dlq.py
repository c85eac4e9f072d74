"""Reading ``memstream.dlq.v1`` and re-driving its records onto the topics they came from.

A dead letter keeps the original key and bytes of a record and, in headers, why it failed
(``streams/deadletter.py``). After the cause is fixed (a worker that knows the schema, a
larger content limit, a repaired store), ``replay`` publishes the chosen records again, as
they were, to their source topic. That is safe to repeat: every sink is idempotent on the
event id, so a record replayed twice is stored once, and a record that is still bad simply
lands in the dead-letter topic again with its reason. Only our own topics are replay targets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from memstream.errors import MemstreamError
from memstream.kafka_security import KafkaSecurity
from schemas import topics

#: Header put on a replayed record: the DLQ position it was re-driven from.
REPLAYED_FROM = "memstream.dlq.replayed_from"
REPLAYABLE_TOPICS = frozenset({topics.TURNS, topics.FACTS, topics.COMPACTION, topics.RETRY})
IDLE_POLLS = 6
POLL_MS = 500


class DeadLetterError(MemstreamError):
    """The dead-letter topic could not be read or re-driven."""


@dataclass(frozen=True)
class DeadLetter:
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: dict[str, str]
    #: The record's time (ms): the original's, so when memstream received it; kept on a replay.
    timestamp_ms: int | None = None

    @property
    def reason(self) -> str:
        return self.headers.get(topics.DLQ_REASON, "")

    @property
    def stage(self) -> str:
        return self.headers.get(topics.DLQ_STAGE, "")

    @property
    def source_topic(self) -> str:
        return self.headers.get(topics.DLQ_SOURCE_TOPIC, "")

    def as_dict(self) -> dict[str, Any]:
        h = self.headers
        return {
            "partition": self.partition,
            "offset": self.offset,
            "failed_at": h.get(topics.DLQ_FAILED_AT),
            "stage": self.stage,
            "error": h.get(topics.DLQ_ERROR),
            "reason": self.reason,
            "source": {
                "topic": self.source_topic,
                "partition": _int(h.get(topics.DLQ_SOURCE_PARTITION)),
                "offset": _int(h.get(topics.DLQ_SOURCE_OFFSET)),
            },
            "bytes": len(self.value),
        }


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Selection:
    """Which dead letters: by DLQ offset, by a fragment of the reason, by stage, by source topic
    (all given conditions must hold; no condition at all selects everything)."""

    offsets: frozenset[int] = frozenset()
    reason: str | None = None
    stage: str | None = None
    source_topic: str | None = None

    def __call__(self, letter: DeadLetter) -> bool:
        return (
            (not self.offsets or letter.offset in self.offsets)
            and (self.reason is None or self.reason.lower() in letter.reason.lower())
            and (self.stage is None or letter.stage == self.stage)
            and (self.source_topic is None or letter.source_topic == self.source_topic)
        )


async def read_dead_letters(
    bootstrap_servers: str, *, security: KafkaSecurity, timeout_s: float = 10.0
) -> list[DeadLetter]:
    """Every record of the dead-letter topic, oldest first, read without a consumer group (so
    nothing is committed and reading never hides a record from anyone)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False,
        request_timeout_ms=int(timeout_s * 1000), **security.client_kwargs(),
    )  # fmt: skip
    try:
        await asyncio.wait_for(consumer.start(), timeout_s)
        partitions = consumer.partitions_for_topic(topics.DLQ)
        if partitions is None:
            await asyncio.wait_for(consumer._client.force_metadata_update(), timeout_s)
            partitions = consumer.partitions_for_topic(topics.DLQ) or set()
        tps = [TopicPartition(topics.DLQ, p) for p in sorted(partitions)]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        letters: list[DeadLetter] = []
        idle = 0
        while idle < IDLE_POLLS:
            batches = await consumer.getmany(*tps, timeout_ms=POLL_MS)
            got = sum(len(records) for records in batches.values())
            for tp, records in batches.items():
                letters.extend(
                    DeadLetter(
                        partition=tp.partition,
                        offset=r.offset,
                        key=r.key,
                        value=r.value or b"",
                        headers={k: (v or b"").decode("utf-8", "replace") for k, v in r.headers},
                        timestamp_ms=r.timestamp if r.timestamp is not None and r.timestamp > 0 else None,
                    )
                    for r in records
                )
            # The high watermark comes from fetch responses (right on the embedded broker too).
            caught_up = True
            for tp in tps:
                highwater = consumer.highwater(tp)
                caught_up &= highwater is not None and await consumer.position(tp) >= highwater
            if got:
                idle = 0
            elif caught_up:
                break
            else:
                idle += 1  # no high watermark yet (an empty topic): give up after a few polls
        return sorted(letters, key=lambda d: (d.partition, d.offset))
    except (KafkaError, OSError, TimeoutError) as exc:
        raise DeadLetterError(f"cannot read {topics.DLQ} from {bootstrap_servers}: {exc!r}") from exc
    finally:
        await consumer.stop()


async def replay_dead_letters(
    bootstrap_servers: str, letters: Sequence[DeadLetter], *, security: KafkaSecurity, timeout_s: float = 10.0
) -> list[DeadLetter]:
    """Publish each letter's original record to its source topic; returns those re-driven.
    Letters whose source is not one of our topics are refused before anything is sent."""
    foreign = sorted({d.source_topic for d in letters if d.source_topic not in REPLAYABLE_TOPICS})
    if foreign:
        raise DeadLetterError(f"refusing to replay onto topics that are not memstream's: {', '.join(foreign)}")
    if not letters:
        return []
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, acks="all", enable_idempotence=False,
        request_timeout_ms=int(timeout_s * 1000), **security.client_kwargs(),
    )  # fmt: skip
    try:
        await asyncio.wait_for(producer.start(), timeout_s)
        acks = [
            await producer.send(
                d.source_topic,
                key=d.key,
                value=d.value,
                headers=[(REPLAYED_FROM, f"{d.partition}:{d.offset}".encode())],
                timestamp_ms=d.timestamp_ms,  # when memstream received it, not when it was re-driven
            )
            for d in letters
        ]
        await asyncio.wait_for(asyncio.gather(*acks), timeout_s)
        return list(letters)
    except (KafkaError, OSError, TimeoutError) as exc:
        raise DeadLetterError(f"replaying onto {bootstrap_servers} failed: {exc!r}; nothing was removed") from exc
    finally:
        await producer.stop()
