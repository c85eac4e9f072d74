"""1,000 turns across 20 sessions, through the gateway, Kafka and the worker, into
Postgres and Redis; then a SIGKILL of the worker mid-stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.faults import gateway_for, private_stack
from tests.integration.helpers import counts, post_turns, turn

SESSIONS = 20
PER_SESSION = 50
TOTAL = SESSIONS * PER_SESSION


def conversation(tenant: str) -> list[list[dict[str, object]]]:
    """Batches of 50 turns, interleaving sessions, each session's turns in order."""
    turns = [
        turn(
            tenant,
            f"s{s:02d}",
            f"session {s} turn {i}: we discussed topic {(s * 7 + i) % 13}",
            role="user" if i % 2 == 0 else "assistant",
            user_id=f"user-{s % 4}",
        )
        for i in range(PER_SESSION)
        for s in range(SESSIONS)
    ]
    return [turns[i : i + 50] for i in range(0, TOTAL, 50)]


async def test_thousand_turns_land_exactly_once_everywhere(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    turns = [t for batch in conversation(tenant) for t in batch]
    assert (turns[0]["session_id"], turns[0]["user_id"]) == ("s00", "user-0")
    turns[0]["content"] = "Our deploys use rsync with checksum verification, never scp"
    ids = []
    for i in range(0, len(turns), 100):
        ids.extend(await post_turns(gateway, turns[i : i + 100]))
    assert len(set(ids)) == TOTAL

    await eventually(lambda: counts(stack, tenant) == (TOTAL, TOTAL), timeout_s=60)

    # Each session's buffer holds its last N turns, in order (the buffer stage writes a batch
    # concurrently with the Postgres sinks, so the last batch's may land after they counted).
    n = stack.settings.buffer_max_turns
    differ: dict[str, list[str]] = {}

    async def buffers_hold_the_last_turns() -> bool:
        differ.clear()
        for s in range(SESSIONS):
            response = await gateway.get(
                f"/v1/sessions/s{s:02d}/buffer", params={"tenant_id": tenant, "user_id": f"user-{s % 4}"}
            )
            assert response.status_code == 200
            contents = [t["content"] for t in response.json()["turns"]]
            expected = [
                f"session {s} turn {i}: we discussed topic {(s * 7 + i) % 13}"
                for i in range(PER_SESSION - n, PER_SESSION)
            ]
            if contents != expected:
                differ[f"s{s:02d}"] = contents
        return not differ

    try:
        await eventually(buffers_hold_the_last_turns, timeout_s=30)
    except AssertionError as exc:
        raise AssertionError(f"buffers not the last {n} turns in order: {differ}") from exc

    # Search finds a known turn, for its user only.
    response = await gateway.get(
        "/v1/search",
        params={
            "tenant_id": tenant,
            "user_id": "user-0",
            "q": "how do we deploy? rsync or scp",
            "k": 5,
            "memory_types": "episodic",  # the turns themselves (facts extracted from them may rank too)
        },
    )
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits[0]["content"].startswith("Our deploys use rsync")
    assert hits[0]["parts"]["vector_rank"] is not None and hits[0]["parts"]["text_rank"] is not None
    other = await gateway.get(
        "/v1/search",
        params={"tenant_id": tenant, "user_id": "user-1", "q": "rsync checksum scp", "k": 5},
    )
    assert all("rsync" not in h["content"] for h in other.json()["hits"])


async def test_worker_killed_mid_stream_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """On a stack of its own (the session's worker is never killed: tests do not depend on
    their order)."""
    tenant = "t-killed"
    async with private_stack(tmp_path) as stack:
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        async with gateway_for(stack.settings, stack.key(tenant)) as gateway:
            killed_at: tuple[int, int] | None = None
            for i, batch in enumerate(conversation(tenant)):
                await post_turns(gateway, batch)
                if killed_at is None and i >= 4:
                    await eventually(lambda: counts(stack, tenant)[0] >= 150, timeout_s=30)
                    worker.kill()
                    killed_at = counts(stack, tenant)
                await asyncio.sleep(0.02)
        assert killed_at is not None and killed_at[0] < TOTAL, "the kill must land mid-stream"

        await asyncio.to_thread(worker.start)
        await eventually(lambda: counts(stack, tenant) == (TOTAL, TOTAL), timeout_s=90)
        await asyncio.sleep(2)  # let any redelivered batch land, then count again
        assert counts(stack, tenant) == (TOTAL, TOTAL)
        with stack.db(tenant) as conn:
            row = conn.execute(
                "SELECT count(DISTINCT event_id), count(DISTINCT session_id) FROM episodes WHERE tenant_id = %s",
                (tenant,),
            ).fetchone()
        assert row == (TOTAL, SESSIONS)
