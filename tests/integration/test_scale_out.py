"""Scale-out: workers of one consumer group share the partitions, and adding or removing
one under load (cleanly or by SIGKILL) loses nothing and duplicates nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import redis.asyncio as aioredis

from schemas.topics import TURNS
from streams.heartbeat import assignments
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import counts, post_turns, turn

SESSIONS = 12


@pytest.fixture
def extra_workers(stack: RunningStack) -> Iterator[list[WorkerHandle]]:
    """Up to two more workers in the session worker's group; stopped at the end."""
    handles = [WorkerHandle(stack.settings, stack.settings.data_dir / "logs" / f"worker-extra-{i}.log") for i in (2, 3)]
    try:
        yield handles
    finally:
        for handle in handles:
            if handle.process.running:
                handle.stop()


async def turns_partitions(stack: RunningStack) -> dict[str, set[int]]:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        held = await assignments(client, app_id=stack.settings.app_id)
    finally:
        await client.aclose()
    return {
        member: {int(p.rsplit(":", 1)[1]) for p in parts if p.rsplit(":", 1)[0] == TURNS}
        for member, parts in held.items()
    }


async def shared_by(stack: RunningStack, n: int) -> bool:
    """``n`` live workers hold the turns partitions between them, each some, none twice."""
    held = await turns_partitions(stack)
    parts = [p for ps in held.values() for p in ps]
    return len(held) == n and all(held.values()) and len(parts) == len(set(parts)) == stack.settings.topic_partitions


async def test_workers_share_partitions_and_joining_or_leaving_under_load_loses_nothing(
    stack: RunningStack, running_worker: WorkerHandle, extra_workers: list[WorkerHandle], gateway: httpx.AsyncClient,
    tenant: str,
) -> None:  # fmt: skip
    second, third = extra_workers
    await eventually(lambda: shared_by(stack, 1), timeout_s=30)
    second.start()
    await eventually(lambda: shared_by(stack, 2), timeout_s=60)

    posted: list[str] = []
    stop = asyncio.Event()

    async def load() -> None:  # ~200 turns/s in batches of 20, every session in order
        i = 0
        while not stop.is_set():
            batch = [turn(tenant, f"s{(i + j) % SESSIONS:02d}", f"turn {i + j}") for j in range(20)]
            posted.extend(await post_turns(gateway, batch))
            i += 20
            await asyncio.sleep(0.1)

    loader = asyncio.create_task(load())
    try:
        await eventually(lambda: len(posted) >= 400, timeout_s=30)
        await asyncio.to_thread(third.start)
        await eventually(lambda: shared_by(stack, 3), timeout_s=60)
        await asyncio.to_thread(second.stop)  # leaves cleanly: its partitions move to the others
        await eventually(lambda: shared_by(stack, 2), timeout_s=60)
        third.kill()  # dies: its partitions move once the group notices
        await eventually(lambda: shared_by(stack, 1), timeout_s=60)
        await eventually(lambda: len(posted) >= 2000, timeout_s=60)
    finally:
        stop.set()
        await loader

    total = len(posted)
    await eventually(lambda: counts(stack, tenant) == (total, total), timeout_s=90)
    await asyncio.sleep(2)  # a redelivered batch would land now
    assert counts(stack, tenant) == (total, total)
    with stack.db(tenant) as conn:
        stored = {str(r[0]) for r in conn.execute("SELECT event_id FROM episodes WHERE tenant_id = %s", (tenant,))}
    assert stored == set(posted)
    for s in range(SESSIONS):  # each session's buffer: distinct turns, in the order they were posted
        body = (await gateway.get(f"/v1/sessions/s{s:02d}/buffer", params={"user_id": "user-1"})).json()
        numbers = [int(t["content"].split()[1]) for t in (*body["pending"], *body["turns"])]
        assert numbers == sorted(set(numbers)), f"session s{s:02d}: {numbers}"
