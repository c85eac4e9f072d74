"""The event-log sink: every accepted event, appended once, never updated."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
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
        ("received_at", "timestamptz"),
    ],
    time_column="received_at",
    order_by=("source_partition", "source_offset"),
)


def _row(t: Turn) -> tuple[Any, ...]:
    return (
        t.tenant_id, t.event_id, t.agent_id, t.user_id, t.project_id, t.session_id, t.role,
        t.content, t.event_time, t.tool_name, t.tool_status, list(t.tags), Jsonb(dict(t.metadata)),
        t.shared, t.schema_id, t.topic, t.partition, t.offset, t.received_at,
    )  # fmt: skip


async def append_events(conn: psycopg.AsyncConnection[Any], turns: Sequence[Turn]) -> dict[str, list[uuid.UUID]]:
    """Append turns to the event log; a turn already there, or of an erased user, is
    skipped. Returns the event ids added, per tenant."""
    return await EVENT_LOG.write(conn, (_row(t) for t in turns))


#: Events the maintenance processes record (compactions): history, not conversation turns.
MAINTENANCE_TOPIC = "memstream.maintenance"
#: The session id maintenance records carry: ``maintenance:<day>``.
MAINTENANCE_SESSION_PREFIX = "maintenance:"


def maintenance_session(day: date) -> str:
    return f"{MAINTENANCE_SESSION_PREFIX}{day.isoformat()}"


async def previous_session(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    user_id: str,
    session_id: str,
    agent_id: str | None,
    before: datetime | None = None,
) -> str | None:
    """ "The previous session": the user's latest session of conversation turns (not maintenance
    records) other than ``session_id``, with an event before ``before`` (if given), among the
    events ``agent_id`` may see — its own and shared ones (all, for None). The one definition
    the read path (for the key's agent) and extraction (for the turn's agent) both use, so that
    "last session" never names another agent's private session."""
    cur = await conn.execute(
        "SELECT session_id FROM event_log WHERE tenant_id = %(tenant)s AND user_id = %(user)s"
        " AND session_id <> %(session)s AND source_topic <> %(maintenance)s"
        " AND (%(before)s::timestamptz IS NULL OR event_time < %(before)s)"
        " AND (%(agent)s::text IS NULL OR shared OR agent_id = %(agent)s)"
        " ORDER BY event_time DESC LIMIT 1",
        {"tenant": tenant_id, "user": user_id, "session": session_id, "maintenance": MAINTENANCE_TOPIC,
         "before": before, "agent": agent_id},
    )  # fmt: skip
    row = await cur.fetchone()
    return str(row[0]) if row else None


@dataclass(frozen=True)
class ContextTurn:
    """A turn of the session logged before the one being extracted."""

    event_id: uuid.UUID
    role: str
    content: str
    event_time: datetime
    project_id: str | None
    tool_name: str | None
    tool_status: str | None


@dataclass(frozen=True)
class LogPosition:
    """Where a turn is in the log: ``seq`` None while the ingest worker has not stored it,
    ``forgotten`` True when an erasure means it never will be (or no longer is)."""

    seq: int | None
    forgotten: bool


async def log_position(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    user_id: str,
    event_id: uuid.UUID,
    received_at: datetime | None,
) -> LogPosition:
    cur = await conn.execute(
        "SELECT (SELECT seq FROM event_log WHERE tenant_id = %(tenant)s AND event_id = %(event)s),"
        " memstream_forgotten(%(tenant)s, %(user)s, %(event)s, %(at)s)",
        {"tenant": tenant_id, "user": user_id, "event": event_id, "at": received_at},
    )
    row = await cur.fetchone()
    if row is None:  # pragma: no cover - a SELECT without FROM returns one row
        raise RuntimeError("log_position returned nothing")
    return LogPosition(seq=row[0], forgotten=bool(row[1]))


_SESSION_TURNS = (
    "SELECT event_id, role, content, event_time, project_id, tool_name, tool_status FROM event_log"
    " WHERE tenant_id = %(tenant)s AND session_id = %(session)s AND user_id = %(user)s"
    " AND source_topic <> %(maintenance)s"
)
_LOGGED_BEFORE = _SESSION_TURNS + " AND seq < %(seq)s ORDER BY seq DESC LIMIT %(limit)s"
_LOGGED_SO_FAR = _SESSION_TURNS + " ORDER BY seq DESC LIMIT %(limit)s"


async def turns_logged_before(
    conn: psycopg.AsyncConnection[Any], *, tenant_id: str, user_id: str, session_id: str, seq: int | None, limit: int
) -> list[ContextTurn]:
    """The user's last ``limit`` turns of the session logged before position ``seq`` (None: all
    logged so far), oldest first: a turn's extraction context. It follows the log's order (the
    order the turns were consumed), so the live worker, a redelivery and a replay all give a
    turn the same context, however far behind the ingest worker was."""
    cur = await conn.execute(
        _LOGGED_BEFORE if seq is not None else _LOGGED_SO_FAR,
        {"tenant": tenant_id, "session": session_id, "user": user_id, "maintenance": MAINTENANCE_TOPIC,
         "seq": seq, "limit": limit},
    )  # fmt: skip
    return [ContextTurn(*row) for row in reversed(await cur.fetchall())]
