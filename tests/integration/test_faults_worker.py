"""Fault: the ingest worker is killed with SIGKILL under load and started again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.integration.faults import (
    KafkaSender,
    TurnLoad,
    assert_exactly_once,
    buffers_settle,
    landed,
    observe,
    private_stack,
    until,
)


async def test_a_worker_killed_with_sigkill_loses_no_turn_and_duplicates_no_memory(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-sigkill"
    async with private_stack(tmp_path) as stack:
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        load = TurnLoad(tenant, KafkaSender(stack.settings.require_kafka()), rate_per_s=300)
        load.start()
        try:
            await load.wait_accepted(450)
            # Mid-batch, with turns in flight: they were written but not yet acknowledged.
            worker.kill()
            killed_at = time.monotonic()
            await load.wait_accepted(len(load.stats.accepted) + 300)  # the load goes on meanwhile
            await asyncio.to_thread(worker.start)
            restarted_at = time.monotonic()
            await load.wait_accepted(len(load.stats.accepted) + 300)
        finally:
            stats = await load.stop()
        caught_up_s = await until(lambda: landed(stack, tenant, stats.accepted), timeout_s=60)
        assert_exactly_once(stack, tenant, stats.accepted)
        await buffers_settle(stack, tenant, stats.by_session)
        observe(
            record_property, "worker_sigkill",
            turns_accepted=len(stats.accepted), worker_down_s=round(restarted_at - killed_at, 2),
            caught_up_after_restart_s=round(time.monotonic() - restarted_at, 2),
            caught_up_after_load_s=round(caught_up_s, 2), lost=0, duplicates=0,
        )  # fmt: skip


async def test_a_worker_whose_services_are_gone_still_stops_when_told(tmp_path: Path) -> None:
    """A worker orphaned with its broker and Postgres gone (its ``memstream up`` was killed)
    used to wait for them forever after SIGTERM, reconnecting in a loop; its stop is bounded."""
    async with private_stack(tmp_path) as stack:
        worker = stack.worker(worker_stop_grace_s=3.0)
        await asyncio.to_thread(worker.start)
        pid = worker.process.pid
        assert pid is not None
        postgres, broker = stack.embedded.postgres, stack.embedded.broker
        assert postgres is not None and broker is not None
        await asyncio.to_thread(broker.stop)
        await asyncio.to_thread(postgres.stop)
        os.kill(pid, signal.SIGTERM)
        stopped_in = await until(lambda: not worker.process.running, timeout_s=30)
        assert stopped_in < 30
