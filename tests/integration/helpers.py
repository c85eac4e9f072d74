"""Small helpers the integration tests share."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from tests.fixtures.stack import RunningStack


def turn(tenant: str, session: str, content: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "tenant_id": tenant,
        "agent_id": "agent-1",
        "user_id": "user-1",
        "session_id": session,
        "role": "user",
        "content": content,
    }
    body.update(extra)
    return body


def avro_record(tenant: str, content: str, *, session: str = "s1", **extra: Any) -> dict[str, Any]:
    """A complete TurnEvent record, as an agent producing to Kafka directly would write it."""
    record: dict[str, Any] = {
        "event_id": str(uuid.uuid4()),
        "tenant_id": tenant,
        "agent_id": "agent-1",
        "user_id": "user-1",
        "project_id": None,
        "session_id": session,
        "role": "user",
        "content": content,
        "event_time": datetime.now(UTC),
        "tool_name": None,
        "tool_status": None,
        "tags": [],
        "metadata": {},
    }
    record.update(extra)
    return record


async def post_turns(gateway: httpx.AsyncClient, turns: list[dict[str, Any]]) -> list[str]:
    response = await gateway.post("/v1/turns", json={"turns": turns})
    assert response.status_code == 202, response.text
    ids: list[str] = response.json()["event_ids"]
    assert len(ids) == len(turns)
    return ids


def count_rows(stack: RunningStack, table: str, tenant: str) -> int:
    assert table in {"episodes", "event_log"}
    with stack.db(tenant) as conn:
        query = {
            "episodes": "SELECT count(*) FROM episodes WHERE tenant_id = %s",
            "event_log": "SELECT count(*) FROM event_log WHERE tenant_id = %s",
        }[table]
        row = conn.execute(query, (tenant,)).fetchone()
    assert row is not None
    return int(row[0])  # type: ignore[call-overload]


def counts(stack: RunningStack, tenant: str) -> tuple[int, int]:
    return count_rows(stack, "episodes", tenant), count_rows(stack, "event_log", tenant)
