"""Fault: the embedded broker is restarted under load. It comes back empty (a new cluster id):
the gateway answers 503 with Retry-After instead of accepting what it cannot persist, and the
worker notices the new log and restarts itself in place (streams/broker_reset.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from streams.topics import TURNS
from tests.integration.faults import (
    GatewaySender,
    TurnLoad,
    gateway_for,
    log_count,
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
