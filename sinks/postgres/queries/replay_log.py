"""Reading the event log for a replay: one tenant at a time (row-level security), in log order
(``seq``), filtered by the replay's scope (a user, a time range).

Callers act for the tenant (``act_as`` / ``tenant_transaction``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from sinks.postgres.event_log import MAINTENANCE_TOPIC


@dataclass(frozen=True)
class LogFilter:
    """Which of a tenant's events a replay reads."""

    user_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def params(self) -> dict[str, Any]:
        return {"user": self.user_id, "since": self.since, "until": self.until}


@dataclass(frozen=True)
class LoggedEvent:
    """One row of the event log, as a replay feeds it to the pipeline."""

    seq: int
    event_id: uuid.UUID
    tenant_id: str
    agent_id: str
    user_id: str
    project_id: str | None
    session_id: str
    role: str
    content: str
    event_time: datetime
    tool_name: str | None
    tool_status: str | None
    tags: list[str]
    metadata: dict[str, Any]
    shared: bool
    source_topic: str
    #: When memstream received it (logged before migration 0017: its event time, the rule
    #: it was stored under).
    received_at: datetime

    @property
    def is_maintenance(self) -> bool:
        """A record of what maintenance did (a compaction), not a conversation turn."""
        return self.source_topic == MAINTENANCE_TOPIC


_READ = """
SELECT seq, event_id, tenant_id, agent_id, user_id, project_id, session_id, role, content, event_time, tool_name,
       tool_status, tags, metadata, shared, source_topic, coalesce(received_at, event_time) AS received_at
FROM event_log
WHERE tenant_id = %(tenant)s AND seq > %(after)s AND seq <= %(upto)s
  AND (%(user)s::text IS NULL OR user_id = %(user)s)
  AND (%(since)s::timestamptz IS NULL OR event_time >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR event_time < %(until)s)
ORDER BY seq LIMIT %(limit)s
"""
_COUNT = """
SELECT count(*) FROM event_log
WHERE tenant_id = %(tenant)s AND seq > %(after)s AND seq <= %(upto)s
  AND (%(user)s::text IS NULL OR user_id = %(user)s)
  AND (%(since)s::timestamptz IS NULL OR event_time >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR event_time < %(until)s)
"""


async def log_end(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> int:
    """The tenant's last log position (0 for none)."""
    cur = await conn.execute("SELECT coalesce(max(seq), 0) FROM event_log WHERE tenant_id = %s", (tenant_id,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def count_events(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, scope: LogFilter, *, after: int, upto: int
) -> int:
    cur = await conn.execute(_COUNT, {"tenant": tenant_id, "after": after, "upto": upto, **scope.params()})
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def read_events(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, scope: LogFilter, *, after: int, upto: int, limit: int
) -> list[LoggedEvent]:
    """The next ``limit`` events of the scope after position ``after``, up to ``upto``."""
    params = {"tenant": tenant_id, "after": after, "upto": upto, "limit": limit, **scope.params()}
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_READ, params)
        return [LoggedEvent(**row) for row in await cur.fetchall()]


async def session_start(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, user_id: str, session_id: str, roles: tuple[str, ...]
) -> datetime | None:
    """When the user's first turn of these roles in the session happened."""
    cur = await conn.execute(
        "SELECT min(event_time) FROM event_log WHERE tenant_id = %s AND session_id = %s AND user_id = %s"
        " AND role = ANY(%s)",
        (tenant_id, session_id, user_id, list(roles)),
    )
    row = await cur.fetchone()
    return row[0] if row else None
