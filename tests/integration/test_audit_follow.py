"""Audit-log consumers: their own position, each change once, in order per tenant."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from ops.audit_follow import AuditFollower, FollowStats
from ops.stack.state import settings_env
from schemas.codec import audit_record_codec
from schemas.topics import AUDIT
from tests.fixtures.stack import RunningStack

CODEC = audit_record_codec()


def record(tenant: str, seq: int) -> dict[str, Any]:
    return {
        "audit_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{tenant}/{seq}")), "tenant_id": tenant, "seq": seq,
        "at": datetime.now(UTC), "actor": "worker", "action": "memory.insert", "subject": None,
        "detail": orjson.dumps({"n": seq}).decode(),
    }  # fmt: skip


async def publish(stack: RunningStack, tenant: str, seqs: range | list[int]) -> None:
    """As the relay does: keyed by tenant, in seq order (a crash makes it publish a page again)."""
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka())
    await producer.start()
    try:
        for seq in seqs:
            await producer.send_and_wait(AUDIT, CODEC.encode(record(tenant, seq)), key=tenant.encode())
    finally:
        await producer.stop()


async def follow(stack: RunningStack, group: str, tenant: str, **run: Any) -> tuple[list[int], FollowStats]:
    seen: list[int] = []

    async def handle(r: dict[str, Any]) -> None:
        assert r["tenant_id"] == tenant
        seen.append(int(r["seq"]))

    follower = AuditFollower(
        stack.settings.require_kafka(), security=stack.settings.kafka_security(), group_id=group, tenant=tenant,
        from_beginning=True, session_timeout_s=4.0,
    )  # fmt: skip
    stats = await follower.run(handle, **{"idle_exit_s": 2.0, **run})
    return seen, stats


async def test_a_consumer_sees_each_change_once_in_order_and_resumes_where_it_committed(
    stack: RunningStack, tenant: str
) -> None:
    group = f"siem-{tenant}"
    await publish(stack, f"{tenant}-other", range(1, 4))
    await publish(stack, tenant, range(1, 7))

    first, _ = await follow(stack, group, tenant, max_records=3)
    assert first == [1, 2, 3]
    second, _ = await follow(stack, group, tenant)
    assert second == [4, 5, 6], "a restart continues after what was committed"

    await publish(stack, tenant, [4, 5, 6, 7])  # the relay crashed after publishing 4-6, then went on
    third, stats = await follow(stack, group, tenant)
    assert third == [7], "repeats from before the committed position are recognised after a restart"
    assert stats.repeats_skipped == 3 and stats.high_water[tenant] == 7

    everything, stats = await follow(stack, f"audit-{tenant}", tenant)
    assert everything == [1, 2, 3, 4, 5, 6, 7], "another group has its own position and sees it all once"
    assert stats.repeats_skipped == 3


def test_audit_tail_prints_json_lines(stack: RunningStack, tenant: str) -> None:
    import asyncio

    asyncio.run(publish(stack, tenant, range(1, 4)))
    result = subprocess.run(
        [sys.executable, "-m", "ops", "audit", "tail", "--tenant", tenant, "--group", f"tail-{tenant}",
         "--from-beginning", "--max", "3"],
        env={**os.environ, **settings_env(stack.settings)}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3]
    assert lines[0]["detail"] == {"n": 1} and lines[0]["tenant_id"] == tenant
    assert "3 records, 0 repeats skipped" in result.stderr
