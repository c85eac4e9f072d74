"""Faults of the stores under load: Postgres stopped for 30 s, Redis stopped, each started again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.integration.faults import (
    KafkaSender,
    TurnLoad,
    assert_exactly_once,
    buffers_settle,
    gateway_for,
    landed,
    log_count,
    observe,
    private_stack,
    until,
)

POSTGRES_OUTAGE_S = 30.0
RETRIED = "retrying in"  # what the sinks log before each backoff (streams/retry.py)


async def readiness(client: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await client.get("/readyz")
    return response.status_code, response.json()["checks"]


async def test_postgres_down_for_30_s_loses_nothing_and_processing_resumes_by_itself(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-pg-outage"
    async with private_stack(tmp_path) as stack:
        assert stack.embedded.postgres is not None
        worker, memory_worker = stack.worker(), stack.worker("memory-worker", memory=True)
        await asyncio.gather(asyncio.to_thread(worker.start), asyncio.to_thread(memory_worker.start))
        load = TurnLoad(tenant, KafkaSender(stack.settings.require_kafka()), rate_per_s=300)
        async with gateway_for(stack.settings, api_key="") as gateway:
            await until(lambda: _ready(gateway), timeout_s=30)
            load.start()
            try:
                await load.wait_accepted(300)
                accepted_before_down = len(load.stats.accepted)
                await asyncio.to_thread(stack.embedded.postgres.stop)
                down_at = time.monotonic()
                not_ready_after_s = await until(lambda: _not_ready_for_postgres(gateway), timeout_s=10)
                while time.monotonic() - down_at < POSTGRES_OUTAGE_S:
                    status, checks = await readiness(gateway)
                    assert status == 503 and not checks["postgres"]["ok"], checks
                    await asyncio.sleep(1.0)
                await asyncio.to_thread(stack.embedded.postgres.start)
                up_at = time.monotonic()
                accepted_while_down = len(load.stats.accepted) - accepted_before_down
                await load.wait_accepted(len(load.stats.accepted) + 300)
            finally:
                stats = await load.stop()
            caught_up_s = await until(lambda: landed(stack, tenant, stats.accepted), timeout_s=90)
            caught_up_after_restart_s = time.monotonic() - up_at
            await until(lambda: _ready(gateway), timeout_s=30)
            ready_again_after_restart_s = time.monotonic() - up_at
        assert_exactly_once(stack, tenant, stats.accepted)
        await buffers_settle(stack, tenant, stats.by_session)
        retries = log_count(worker, RETRIED)
        assert retries > 0, "the sinks never retried: was Postgres really down?"
        # Backoff, not a busy loop: each stage retries at most every retry_initial_s, growing to retry_max_s.
        assert retries < 3 * POSTGRES_OUTAGE_S / stack.settings.retry_initial_s
        observe(
            record_property, "postgres_down_30s",
            turns_accepted=len(stats.accepted), accepted_while_down=accepted_while_down,
            readyz_not_ready_after_s=round(not_ready_after_s, 2), sink_retries_logged=retries,
            readyz_ready_again_after_restart_s=round(ready_again_after_restart_s, 2),
            caught_up_after_restart_s=round(caught_up_after_restart_s, 2),
            caught_up_after_load_s=round(caught_up_s, 2), lost=0, duplicates=0,
        )  # fmt: skip


async def _ready(gateway: httpx.AsyncClient) -> bool:
    return (await readiness(gateway))[0] == 200


async def _not_ready_for_postgres(gateway: httpx.AsyncClient) -> bool:
    status, checks = await readiness(gateway)
    return status == 503 and not checks["postgres"]["ok"]


async def test_redis_down_and_back_the_buffers_back_off_and_end_consistent(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    tenant = "t-redis-outage"
    async with private_stack(tmp_path) as stack:
        assert stack.embedded.redis is not None
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        load = TurnLoad(tenant, KafkaSender(stack.settings.require_kafka()), rate_per_s=300)
        load.start()
        try:
            await load.wait_accepted(300)
            await asyncio.to_thread(stack.embedded.redis.stop)
            down_at = time.monotonic()
            await asyncio.sleep(5.0)
            await asyncio.to_thread(stack.embedded.redis.start)
            up_at = time.monotonic()
            await load.wait_accepted(len(load.stats.accepted) + 300)
        finally:
            stats = await load.stop()
        caught_up_s = await until(lambda: landed(stack, tenant, stats.accepted), timeout_s=60)
        await buffers_settle(stack, tenant, stats.by_session)
        assert_exactly_once(stack, tenant, stats.accepted)
        retries = log_count(worker, RETRIED)
        assert retries > 0, "the buffer updater never retried: was Redis really down?"
        observe(
            record_property, "redis_down_5s",
            turns_accepted=len(stats.accepted), redis_down_s=round(up_at - down_at, 2), buffer_retries_logged=retries,
            caught_up_after_load_s=round(caught_up_s, 2), buffers_consistent=True, lost=0, duplicates=0,
        )  # fmt: skip
