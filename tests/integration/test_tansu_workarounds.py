"""The embedded broker's two group/offset bugs (docs/embedded-broker.md), shown with plain aiokafka and
worked around by ``streams.tansu.TansuKafkaConsumer`` (what the workers use on Tansu).

Each test runs both consumers on the session's embedded broker: plain aiokafka must still
show the bug (if Tansu fixes it, these tests say so and the workaround can go), the Tansu
consumer must not.
"""

from __future__ import annotations

import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.tansu import TansuGroupCoordinator, TansuKafkaConsumer
from tests.fixtures.stack import RunningStack

#: Records per batch, per partition: the last batch of each partition holds several records.
BATCHES = {0: (10, 7), 1: (5,), 2: (3, 1, 4)}

CONSUMERS = pytest.mark.parametrize(
    ("consumer_class", "workaround"), [(AIOKafkaConsumer, False), (TansuKafkaConsumer, True)], ids=["aiokafka", "tansu"]
)


async def produce_batches(bootstrap: str, topic: str) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """Send BATCHES as explicit batches; returns (the true end offset, the last batch's first
    offset + 1, which is what Tansu's ListOffsets answers) per partition, from the broker's acks."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    await producer.start()
    ends: dict[TopicPartition, int] = {}
    short: dict[TopicPartition, int] = {}
    try:
        for partition, sizes in BATCHES.items():
            tp = TopicPartition(topic, partition)
            for size in sizes:
                batch = producer.create_batch()
                for i in range(size):
                    assert batch.append(key=None, value=f"record {i}".encode(), timestamp=None) is not None
                metadata = await (await producer.send_batch(batch, topic, partition=partition))
                short[tp] = metadata.offset + 1
                ends[tp] = metadata.offset + size
    finally:
        await producer.stop()
    return ends, short


@CONSUMERS
async def test_end_offsets_and_seek_to_end(
    stack: RunningStack, kafka_admin: AIOKafkaAdminClient, consumer_class: type[AIOKafkaConsumer], workaround: bool
) -> None:
    topic = f"test.tansu.offsets.{uuid.uuid4().hex[:8]}"
    await kafka_admin.create_topics([NewTopic(topic, num_partitions=len(BATCHES), replication_factor=1)])
    ends, short = await produce_batches(stack.settings.require_kafka(), topic)
    assert ends != short  # the last batches hold several records, so the bug shows

    consumer = consumer_class(bootstrap_servers=stack.settings.require_kafka(), enable_auto_commit=False)
    await consumer.start()
    try:
        tps = sorted(ends)
        consumer.assign(tps)
        expected = ends if workaround else short
        assert await consumer.end_offsets(tps) == expected
        await consumer.seek_to_end(*tps)
        assert {tp: await consumer.position(tp) for tp in tps} == expected
    finally:
        await consumer.stop()


@CONSUMERS
async def test_a_clean_stop_in_generation_zero_leaves_the_group(
    stack: RunningStack, kafka_admin: AIOKafkaAdminClient, consumer_class: type[AIOKafkaConsumer], workaround: bool
) -> None:
    """Membership, not timing: a member that did not leave stays until its session times out,
    and the next member's join waits for that (docs/embedded-broker.md: 11 s instead of 3 s here)."""
    topic = f"test.tansu.group.{uuid.uuid4().hex[:8]}"
    group = f"test-group-{uuid.uuid4().hex[:8]}"
    await kafka_admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    consumer = consumer_class(
        topic, bootstrap_servers=stack.settings.require_kafka(), group_id=group,
        # Tansu holds a new group's first join for half of this; the check below comes
        # milliseconds after the stop, far inside it, so a dead member is still listed.
        session_timeout_ms=4_000, heartbeat_interval_ms=1_000,
    )  # fmt: skip
    await consumer.start()
    try:
        await consumer.getmany(timeout_ms=100)
        assert consumer.assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert consumer._coordinator.generation == 0  # Tansu's first generation (Kafka's is 1)
        assert isinstance(consumer._coordinator, TansuGroupCoordinator) is workaround
        member = consumer._coordinator.member_id
        assert await members(kafka_admin, group) == [member]
    finally:
        await consumer.stop()
    assert await members(kafka_admin, group) == ([] if workaround else [member])


async def members(kafka_admin: AIOKafkaAdminClient, group: str) -> list[str]:
    [response] = await kafka_admin.describe_consumer_groups([group])
    [(error_code, _, _, _, _, described, *_)] = response.groups
    assert error_code == 0
    return [member_id for member_id, *_ in described]
