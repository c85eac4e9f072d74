"""The embedded broker auto-creates an unknown topic with 4 partitions as soon as a client asks
for its metadata, and has no CreatePartitions (docs/embedded-broker.md). With
``refuse_topic_auto_creation`` (the gateway and workers on the embedded broker) asking creates
nothing: a send to a missing topic fails (UnknownTopicOrPartition), and the topic gets the partition count it is created with.

Both halves run on the session's embedded broker and set the process-wide metadata request
themselves (restored afterwards), so they do not depend on which tests ran before."""

from __future__ import annotations

import uuid

import aiokafka.client
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import UnknownTopicOrPartitionError
from aiokafka.protocol.metadata import MetadataRequest

from streams.topics import MetadataRequestWithoutAutoCreation, refuse_topic_auto_creation
from tests.fixtures.stack import RunningStack


async def partitions_of(kafka_admin: AIOKafkaAdminClient, topic: str) -> int | None:
    if topic not in await kafka_admin.list_topics():
        return None
    (described,) = await kafka_admin.describe_topics([topic])
    return len(described["partitions"])


async def send_one(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, request_timeout_ms=1500)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"value", key=b"key")
    finally:
        await producer.stop()


async def test_plain_aiokafka_makes_the_broker_auto_create_a_topic_with_4_partitions(
    stack: RunningStack, kafka_admin: AIOKafkaAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker's behaviour: if Tansu stops auto-creating, this says so and the workaround can go."""
    monkeypatch.setattr(aiokafka.client, "MetadataRequest", MetadataRequest)
    topic = f"test.autocreate.{uuid.uuid4().hex[:8]}"
    await send_one(stack.settings.require_kafka(), topic)
    assert await partitions_of(kafka_admin, topic) == 4


async def test_without_auto_creation_a_send_to_a_missing_topic_fails_and_the_topic_keeps_its_own_count(
    stack: RunningStack, kafka_admin: AIOKafkaAdminClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aiokafka.client, "MetadataRequest", aiokafka.client.MetadataRequest)  # restored after
    refuse_topic_auto_creation()
    assert aiokafka.client.MetadataRequest is MetadataRequestWithoutAutoCreation
    bootstrap = stack.settings.require_kafka()
    topic = f"test.no-autocreate.{uuid.uuid4().hex[:8]}"
    with pytest.raises(UnknownTopicOrPartitionError):
        await send_one(bootstrap, topic)
    assert await partitions_of(kafka_admin, topic) is None, "asking for its metadata created the topic"
    await kafka_admin.create_topics([NewTopic(topic, num_partitions=12, replication_factor=1)])
    await send_one(bootstrap, topic)
    assert await partitions_of(kafka_admin, topic) == 12
