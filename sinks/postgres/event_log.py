"""The event-log sink: every accepted event, appended once, never updated."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from schemas.turns import Turn
from sinks.postgres.staging import StagedInsert

EVENT_LOG = StagedInsert(
    table="event_log",
    columns=(
        "tenant_id",
        "event_id",
        "agent_id",
        "user_id",
        "project_id",
        "session_id",
        "role",
        "content",
        "event_time",
        "tool_name",
        "tool_status",
        "tags",
        "metadata",
        "schema_id",
        "source_topic",
        "source_partition",
        "source_offset",
    ),
    types=(
        "text",
        "uuid",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "timestamptz",
        "text",
        "text",
        "text[]",
        "jsonb",
        "int4",
        "text",
        "int4",
        "int8",
    ),
    order_by=("source_partition", "source_offset"),
)


def _row(t: Turn) -> tuple[Any, ...]:
    return (
        t.tenant_id,
        t.event_id,
        t.agent_id,
        t.user_id,
        t.project_id,
        t.session_id,
        t.role,
        t.content,
        t.event_time,
        t.tool_name,
        t.tool_status,
        list(t.tags),
        Jsonb(dict(t.metadata)),
        t.schema_id,
        t.topic,
        t.partition,
        t.offset,
    )


async def append_events(conn: psycopg.AsyncConnection[Any], turns: Sequence[Turn]) -> int:
    """Append turns to the event log; a turn already there is skipped. Returns rows added."""
    return await EVENT_LOG.write(conn, (_row(t) for t in turns))
