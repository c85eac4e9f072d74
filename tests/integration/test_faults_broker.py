"""Fault: the embedded broker is restarted under load. It comes back empty (a new cluster id):
the gateway answers 503 with Retry-After instead of accepting what it cannot persist, and the
worker notices the new log and restarts itself in place (streams/broker_reset.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.topics import TURNS
from tests.integration.faults import (
    GatewaySender,
    KafkaSender,
    TurnLoad,
    gateway_for,
    log_count,
    make_turn,
    observe,
    private_stack,
    stored_ids,
    until,
)

BROKER_DOWN_S = 3.0


async def turns_partitions(bootstrap_servers: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers)
    await consumer.start()
    try:
        await consumer.topics()  # fetches metadata of every topic
        return len(consumer.partitions_for_topic(TURNS) or ())
    finally:
        await consumer.stop()


async def test_a_broker_back_empty_gets_503s_meanwhile_and_the_worker_recovers_by_itself(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-broker-reset"
    async with private_stack(tmp_path, produce_timeout_s=2.0) as stack:
        broker = stack.embedded.broker
        assert broker is not None
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        pid = worker.process.pid
        old_cluster = broker.cluster_id
        async with gateway_for(stack.settings, stack.key(tenant)) as client:
            load: TurnLoad = TurnLoad(tenant, GatewaySender(client, lambda: load.stats), rate_per_s=300)
            load.start()
            try:
                await load.wait_accepted(300)
                await asyncio.to_thread(broker.stop)  # SIGTERM: it may serve a little longer while it goes
                before = len(load.stats.accepted)
                await asyncio.sleep(BROKER_DOWN_S)
                refused_while_down = load.stats.refused_batches
                after = len(load.stats.accepted)  # everything from here on goes to the new broker
                await asyncio.to_thread(broker.start)
                restarted_at = time.monotonic()
                accepting_again_s = await until(lambda: len(load.stats.accepted) > after, timeout_s=30)
                await load.wait_accepted(after + 300, timeout_s=60)
            finally:
                stats = await load.stop()
        assert broker.cluster_id != old_cluster
        assert refused_while_down > 0, "the gateway accepted turns while the broker was down"
        assert stats.retry_after, "the 503s said nothing about when to retry"
        # At most the batch in flight as it stopped (acknowledged by the old broker as it went).
        assert after - before <= load.batch, "turns were accepted while the broker was down"

        new_log = stats.accepted[after:]

        def all_new_turns_landed() -> bool:
            return all(set(new_log) <= set(stored_ids(stack, tenant, table)) for table in ("event_log", "episodes"))

        caught_up_s = await until(all_new_turns_landed, timeout_s=90)
        for table in ("event_log", "episodes"):
            ids = stored_ids(stack, tenant, table)
            assert len(ids) == len(set(ids)), f"{table}: duplicates"
            assert set(ids) <= set(stats.accepted)
        assert worker.process.running and worker.process.pid == pid, "the worker should restart in place"
        assert log_count(worker, "is a new, empty log") == 1
        # Whoever re-created the turns topic (the gateway's new producer or the restarted worker),
        # it has the configured partitions, not the broker's auto-created 4.
        assert await turns_partitions(stack.settings.require_kafka()) == stack.settings.topic_partitions
        # What the old broker acknowledged but the worker had not written when it went: gone with it.
        lost_with_the_broker = len(set(stats.accepted[:after]) - set(stored_ids(stack, tenant, "event_log")))
        observe(
            record_property, "broker_restart_empty",
            turns_accepted=len(stats.accepted), broker_down_s=BROKER_DOWN_S, refused_batches_503=stats.refused_batches,
            retry_after_s=sorted(stats.retry_after), gateway_accepting_again_after_s=round(accepting_again_s, 2),
            worker_caught_up_after_restart_s=round(time.monotonic() - restarted_at, 2),
            caught_up_after_load_s=round(caught_up_s, 2), lost_with_the_old_broker=lost_with_the_broker, duplicates=0,
        )  # fmt: skip


async def test_a_worker_reads_a_new_broker_log_from_its_start_whatever_an_older_incarnation_committed(
    tmp_path: Path,
) -> None:
    """The cause of the loss above (issue 11): a worker that lived through the broker's restart
    committed the old log's offsets into the new broker's copy of its group before it noticed the
    new cluster; the fresh worker resumed there and skipped the new log. Here the stale commit is
    made on purpose, under the group name every worker used before groups were named after the
    broker incarnation: a worker must read every turn of the log anyway."""
    tenant = "t-stale-commit"
    async with private_stack(tmp_path) as stack:
        sender = KafkaSender(stack.settings.require_kafka())
        turns = [make_turn(tenant, f"s{i % 10:02d}", f"turn {i} on the new log") for i in range(60)]
        try:
            assert await sender(turns)
        finally:
            await sender.close()
        stale = AIOKafkaConsumer(bootstrap_servers=stack.settings.require_kafka(), group_id=stack.settings.app_id,
                                 enable_auto_commit=False)  # fmt: skip
        await stale.start()
        try:
            partitions = [TopicPartition(TURNS, p) for p in range(stack.settings.topic_partitions)]
            stale.assign(partitions)
            await stale.commit({tp: 1_000 for tp in partitions})  # the old log's positions
        finally:
            await stale.stop()
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        want = {t["event_id"] for t in turns}
        await until(lambda: want <= set(stored_ids(stack, tenant, "event_log")), timeout_s=60)
