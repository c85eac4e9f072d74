"""Reading semantic memory: current facts (or as they were at a moment), and an entity's history."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row


@dataclass(frozen=True)
class FactRow:
    fact_id: uuid.UUID
    user_id: str
    agent_id: str
    session_id: str
    project_id: str | None
    scope: str
    entity: str
    category: str
    summary: str
    importance: float
    version: int
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: uuid.UUID | None
    change_reason: str
    source_event_id: uuid.UUID
    sources: list[uuid.UUID]
    extractor: str


#: As of ``at`` (default now): valid then, not expired, in the requested scope, and where they
#: apply: the user's global facts, the project's with a project, the session's with a session
#: (the seeds' rule, ``user AND (project = P OR scope = 'global')``, with session facts kept to
#: their session). ``every``: every project's and every session's too, unless one is named.
_AS_OF = """
SELECT fact_id, user_id, agent_id, session_id, project_id, scope, entity, category, summary, importance,
       version, valid_from, valid_to, superseded_by, change_reason, source_event_id, sources, extractor
FROM facts
WHERE user_id = %(user)s
  AND valid_from <= coalesce(%(at)s, now()) AND (valid_to IS NULL OR valid_to > coalesce(%(at)s, now()))
  AND (expires_at IS NULL OR expires_at > now())
  AND (%(scope)s::text IS NULL OR scope = %(scope)s)
  AND (scope = 'global'
       OR (scope = 'project' AND (project_id = %(project)s OR (%(every)s AND %(project)s::text IS NULL)))
       OR (scope = 'session' AND (session_id = %(session)s OR (%(every)s AND %(session)s::text IS NULL))))
ORDER BY scope, entity, valid_from
LIMIT %(limit)s
"""
_HISTORY = """
SELECT fact_id, user_id, agent_id, session_id, project_id, scope, entity, category, summary, importance,
       version, valid_from, valid_to, superseded_by, change_reason, source_event_id, sources, extractor
FROM facts
WHERE user_id = %(user)s AND entity = %(entity)s
ORDER BY subject_key, valid_from, version
"""


async def facts_as_of(
    conn: psycopg.AsyncConnection[Any],
    *,
    user_id: str,
    at: datetime | None = None,
    scope: str | None = None,
    project_id: str | None = None,
    session_id: str | None = None,
    every: bool = False,
    limit: int = 500,
) -> list[FactRow]:
    """The user's facts that apply in ``project_id`` and ``session_id`` (``_AS_OF``): global
    ones, and those of the project and of the session named; with ``every``, those of every
    project and session not named too (the explorer's list of everything)."""
    async with conn.cursor(row_factory=class_row(FactRow)) as cur:
        await cur.execute(
            _AS_OF,
            {"user": user_id, "at": at, "scope": scope, "project": project_id, "session": session_id,
             "every": every, "limit": limit},
        )  # fmt: skip
        return await cur.fetchall()


async def entity_history(conn: psycopg.AsyncConnection[Any], *, user_id: str, entity: str) -> list[FactRow]:
    async with conn.cursor(row_factory=class_row(FactRow)) as cur:
        await cur.execute(_HISTORY, {"user": user_id, "entity": entity})
        return await cur.fetchall()
