"""A user's episodes as a timeline, newest first, each with where it came from.

Every episode the reader may see (row-level security: an agent-bound reader sees its own and
shared ones), archived originals included and marked; expired rows (already never served) and
forgotten ones are not there. Pages are keyset ranges of (event time, event id) over the
``episodes_timeline`` index (migration 0011).

Where an episode came from is read from the event log, under the same row-level security:

- a turn (``episodic``): its own event, consumed from Kafka at a topic, partition and offset;
- a lesson (``procedural``): the failed tool outcome it was drawn from
  (``metadata.source_event_id``, written by the procedures stage);
- a daily summary (``summary``): the compaction's record (``compaction_record_id``), which
  names the summariser that wrote it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from sinks.postgres.event_log import MAINTENANCE_TOPIC
from sinks.postgres.maintenance import compaction_record_id

EPISODE_TYPES = ("episodic", "procedural", "summary")


@dataclass(frozen=True)
class TimelineFilters:
    user_id: str
    session_id: str | None = None
    #: Exactly this project's episodes (not those of no project).
    project_id: str | None = None
    memory_types: tuple[str, ...] = EPISODE_TYPES
    include_archived: bool = True
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Source:
    #: The event it came from (None when unknown: a summary without its compaction record).
    event_id: uuid.UUID | None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    #: The summariser of a daily summary.
    produced_by: str | None = None


@dataclass(frozen=True)
class TimelineEntry:
    event_id: uuid.UUID
    memory_type: str
    role: str
    content: str
    session_id: str
    project_id: str | None
    agent_id: str
    shared: bool
    importance: float
    tags: list[str]
    created_at: datetime
    ingested_at: datetime
    archived_at: datetime | None
    archived_into: uuid.UUID | None
    source: Source


_TIMELINE = """
SELECT event_id, memory_type, role, content, session_id, project_id, agent_id, shared, importance, tags,
       created_at, ingested_at, archived_at, archived_into, metadata->>'source_event_id' AS lesson_source
FROM episodes e
WHERE tenant_id = %(tenant)s AND user_id = %(user)s
  AND (%(session)s::text IS NULL OR session_id = %(session)s)
  AND (%(project)s::text IS NULL OR project_id = %(project)s)
  AND memory_type = ANY(%(types)s::text[])
  AND (%(archived)s OR archived_at IS NULL)
  AND (expires_at IS NULL OR expires_at > now())
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND NOT memstream_episode_forgotten(tenant_id, event_id)
  {after}
ORDER BY created_at DESC, event_id DESC
LIMIT %(limit)s
"""
#: The page after a cursor: one index range (a row comparison, not an OR of parameters).
_AFTER = sql.SQL("AND (created_at, event_id) < (%(after_time)s::timestamptz, %(after_id)s::uuid)")
_FIRST = sql.SQL(_TIMELINE).format(after=sql.SQL(""))
_NEXT = sql.SQL(_TIMELINE).format(after=_AFTER)

_SOURCES = """
SELECT event_id, source_topic, source_partition, source_offset,
       metadata->>'summarizer' AS summarizer, metadata->>'summary_event_id' AS summary_event_id
FROM event_log WHERE tenant_id = %s AND event_id = ANY(%s::uuid[])
"""


async def user_timeline(
    conn: psycopg.AsyncConnection[Any],
    tenant_id: str,
    filters: TimelineFilters,
    *,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[TimelineEntry]:
    """Up to ``limit`` episodes of the user, newest first, strictly after ``after`` (the
    (event time, event id) of the previous page's last one), as the current reader may see them."""
    params: dict[str, Any] = {
        "tenant": tenant_id, "user": filters.user_id, "session": filters.session_id, "project": filters.project_id,
        "types": list(filters.memory_types), "archived": filters.include_archived, "since": filters.since,
        "until": filters.until, "limit": limit,
    }  # fmt: skip
    if after is not None:
        params.update(after_time=after[0], after_id=after[1])
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_FIRST if after is None else _NEXT, params)
        rows = await cur.fetchall()
    origins = {row["event_id"]: _origin(row) for row in rows}
    logged = await _logged(conn, tenant_id, [o for o in origins.values() if o is not None])
    return [_entry(row, _source(row, origins[row["event_id"]], logged)) for row in rows]


def _origin(row: Mapping[str, Any]) -> uuid.UUID | None:
    """The event-log id of where an episode came from (see the module's docstring)."""
    if row["memory_type"] == "summary":
        return compaction_record_id(row["event_id"])
    if row["memory_type"] == "procedural":
        return _uuid_or_none(row["lesson_source"])
    event_id: uuid.UUID = row["event_id"]
    return event_id


def _uuid_or_none(text: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None


async def _logged(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, Any]]:
    if not ids:
        return {}
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_SOURCES, (tenant_id, list(set(ids))))
        return {row["event_id"]: row for row in await cur.fetchall()}


def _source(row: Mapping[str, Any], origin: uuid.UUID | None, logged: Mapping[uuid.UUID, Mapping[str, Any]]) -> Source:
    found = logged.get(origin) if origin is not None else None
    if row["memory_type"] == "summary":
        # Only the compaction's own record counts (a turn's event id is its client's to choose).
        if found is None or (found["source_topic"], found["summary_event_id"]) != (
            MAINTENANCE_TOPIC,
            str(row["event_id"]),
        ):
            return Source(event_id=None)
        return Source(event_id=origin, topic=found["source_topic"], produced_by=found["summarizer"])
    if found is None:
        return Source(event_id=origin)
    partition, offset = found["source_partition"], found["source_offset"]
    return Source(
        event_id=origin, topic=found["source_topic"], partition=partition if partition >= 0 else None,
        offset=offset if offset >= 0 else None,
    )  # fmt: skip


def _entry(row: Mapping[str, Any], source: Source) -> TimelineEntry:
    return TimelineEntry(
        event_id=row["event_id"], memory_type=row["memory_type"], role=row["role"], content=row["content"],
        session_id=row["session_id"], project_id=row["project_id"], agent_id=row["agent_id"],
        shared=bool(row["shared"]), importance=float(row["importance"]), tags=list(row["tags"]),
        created_at=row["created_at"], ingested_at=row["ingested_at"], archived_at=row["archived_at"],
        archived_into=row["archived_into"], source=source,
    )  # fmt: skip
