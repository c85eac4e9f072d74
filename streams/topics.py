"""Topic names (dotted, versioned constants) and their declaration on an app."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import faust
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError

log = logging.getLogger(__name__)

TURNS = "memstream.turns.v1"
DLQ = "memstream.dlq.v1"
AUDIT = "memstream.audit.v1"
FACTS = "memstream.facts.v1"
COMPACTION = "memstream.compaction.v1"
#: Turns whose extraction the LLM could not do yet, parked for a later try (streams/parking.py).
RETRY = "memstream.retry.v1"

#: DLQ record headers (bytes values).
DLQ_REASON = "memstream.dlq.reason"
DLQ_ERROR = "memstream.dlq.error"
DLQ_SOURCE_TOPIC = "memstream.dlq.source.topic"
DLQ_SOURCE_PARTITION = "memstream.dlq.source.partition"
DLQ_SOURCE_OFFSET = "memstream.dlq.source.offset"
DLQ_STAGE = "memstream.dlq.stage"
DLQ_FAILED_AT = "memstream.dlq.failed_at"


@dataclass(frozen=True)
class Topics:
    turns: faust.TopicT
    dlq: faust.TopicT
    audit: faust.TopicT
    facts: faust.TopicT
    compaction: faust.TopicT


def declare_topics(app: faust.App, *, partitions: int) -> Topics:
    """Raw bytes on both: the worker decodes turns itself so a bad record reaches the DLQ
    with its original bytes and the reason, instead of crashing the stream."""

    def raw(name: str, partitions: int) -> faust.TopicT:
        return app.topic(
            name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
            partitions=partitions,
        )  # fmt: skip

    return Topics(
        turns=raw(TURNS, partitions),
        dlq=raw(DLQ, 1),
        audit=raw(AUDIT, partitions),
        facts=raw(FACTS, partitions),
        compaction=raw(COMPACTION, partitions),
    )


async def ensure_topics(bootstrap_servers: str, *, partitions: int, replication_factor: int = 1) -> None:
    """Create our topics if missing (brokers that auto-create would pick their own counts)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(name=TURNS, num_partitions=partitions, replication_factor=replication_factor),
            NewTopic(name=DLQ, num_partitions=1, replication_factor=replication_factor),
            NewTopic(name=AUDIT, num_partitions=partitions, replication_factor=replication_factor),
            NewTopic(name=FACTS, num_partitions=partitions, replication_factor=replication_factor),
            NewTopic(name=COMPACTION, num_partitions=partitions, replication_factor=replication_factor),
            NewTopic(name=RETRY, num_partitions=partitions, replication_factor=replication_factor),
        ]
        missing = [t for t in wanted if t.name not in existing]
        if missing:
            try:
                await admin.create_topics(missing)
                log.info("created topics %s", ", ".join(t.name for t in missing))
            except TopicAlreadyExistsError:
                pass
    except KafkaError:
        log.exception("could not create topics on %s", bootstrap_servers)
        raise
    finally:
        await admin.close()
