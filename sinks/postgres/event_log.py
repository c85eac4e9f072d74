"""The event-log sink: every accepted event, appended once, never updated."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from schemas.turns import Turn
from sinks.postgres.staging import StagedInsert

EVENT_LOG = StagedInsert.of(
    "event_log",
    [
        ("tenant_id", "text"),
        ("event_id", "uuid"),
        ("agent_id", "text"),
        ("user_id", "text"),
        ("project_id", "text"),
        ("session_id", "text"),
        ("role", "text"),
        ("content", "text"),
        ("event_time", "timestamptz"),
        ("tool_name", "text"),
        ("tool_status", "text"),
        ("tags", "text[]"),
        ("metadata", "jsonb"),
        ("shared", "bool"),
        ("schema_id", "int4"),
        ("source_topic", "text"),
        ("source_partition", "int4"),
        ("source_offset", "int8"),
    ],
    time_column="event_time",
    order_by=("source_partition", "source_offset"),
)


def _row(t: Turn) -> tuple[Any, ...]:
    return (
        t.tenant_id, t.event_id, t.agent_id, t.user_id, t.project_id, t.session_id, t.role,
        t.content, t.event_time, t.tool_name, t.tool_status, list(t.tags), Jsonb(dict(t.metadata)),
        t.shared, t.schema_id, t.topic, t.partition, t.offset,
    )  # fmt: skip


async def append_events(conn: psycopg.AsyncConnection[Any], turns: Sequence[Turn]) -> dict[str, list[uuid.UUID]]:
    """Append turns to the event log; a turn already there, or of an erased user, is
    skipped. Returns the event ids added, per tenant."""
    return await EVENT_LOG.write(conn, (_row(t) for t in turns))


#: Events the maintenance processes record (compactions): history, not conversation turns.
MAINTENANCE_TOPIC = "memstream.maintenance"


async def previous_session(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, user_id: str, session_id: str, before: datetime
) -> str | None:
    """The user's latest session (of conversation turns) with an event before ``before``."""
    cur = await conn.execute(
        "SELECT session_id FROM event_log WHERE tenant_id = %s AND user_id = %s AND session_id <> %s"
        " AND event_time < %s AND source_topic <> %s ORDER BY event_time DESC LIMIT 1",
        (tenant_id, user_id, session_id, before, MAINTENANCE_TOPIC),
    )
    row = await cur.fetchone()
    return str(row[0]) if row else None
