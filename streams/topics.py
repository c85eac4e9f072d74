"""The topics declared on a Faust app, and created (with their partition counts) on a broker.
Their names are the event contract's: ``schemas/topics.py``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiokafka.client
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError
from aiokafka.protocol.metadata import MetadataRequest

from memstream.kafka_security import KafkaSecurity
from schemas.topics import AUDIT, COMPACTION, DLQ, FACTS, RETRY, TURNS

if TYPE_CHECKING:  # annotations only: importing this module does not import Faust
    import faust

log = logging.getLogger(__name__)


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


async def ensure_topics(
    bootstrap_servers: str, *, security: KafkaSecurity, partitions: int, replication_factor: int = 1
) -> None:
    """Create our topics if missing (brokers that auto-create would pick their own counts)."""
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap_servers, request_timeout_ms=10_000, **security.client_kwargs()
    )
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


class MetadataRequestWithoutAutoCreation(MetadataRequest):  # type: ignore[misc]  # aiokafka ships no type information
    """A metadata request that leaves unknown topics unknown unless told otherwise."""

    def __init__(self, topics: list[str] | None = None, allow_auto_topic_creation: bool | None = None) -> None:
        super().__init__(topics, False if allow_auto_topic_creation is None else allow_auto_topic_creation)


def refuse_topic_auto_creation() -> None:
    """Make every aiokafka client of this process (Faust's included) ask for metadata without
    auto-creating topics. For processes on the embedded broker (docs/embedded-broker.md):
    Tansu creates an unknown topic with 4 partitions as soon as a client asks for its
    metadata, and aiokafka always asks with ``allow_auto_topic_creation``. After a broker
    restart the first to ask (a worker's consumer, or a gateway producer still flushing)
    re-created the turns topic with 4 partitions before :func:`ensure_topics` could create it
    with its own count, and it stayed at 4 (Tansu has no CreatePartitions). Tansu honours the
    flag: a producer's send to a missing topic then fails (UnknownTopicOrPartition; the gateway
    answers 503 and creates the topics before its next producer) and a consumer waits for it.
    Idempotent."""
    aiokafka.client.MetadataRequest = MetadataRequestWithoutAutoCreation
