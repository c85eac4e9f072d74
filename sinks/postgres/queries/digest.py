"""A digest of every projection, to compare memory rebuilt from the event log with the live one.

Each row is hashed as text (md5 of the row's columns), the hashes are concatenated in key
order and hashed again, per tenant and table, in SQL (a vector's text form is exact, so equal
vectors hash equal). Left out: what the log cannot determine — when a row was written
(``ingested_at``, ``recorded_at``, ``archived_at``: whether a row is archived counts, when
does not), access statistics, generated columns (a function of the others), and a skill's
creation time. Timestamps print in UTC. Callers act for the tenant.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from sinks.postgres.shadow import columns, table

#: (table, key the rows are ordered by, columns left out, expressions added)
DIGESTED: tuple[tuple[str, str, frozenset[str], tuple[str, ...]], ...] = (
    ("episodes", "event_id", frozenset({"ingested_at", "last_accessed_at", "access_count", "archived_at"}),
     ("archived_at IS NOT NULL",)),
    ("facts", "fact_id", frozenset({"recorded_at", "last_accessed_at", "access_count"}), ()),
    ("edges", "edge_id", frozenset(), ()),
    ("skills", "skill_id", frozenset({"created_at"}), ()),
    ("skill_runs", "event_id", frozenset({"skill_id"}),
     ("(SELECT k.name FROM {skills} k WHERE k.tenant_id = r.tenant_id AND k.skill_id = r.skill_id)",)),
)  # fmt: skip


async def table_digest(
    conn: psycopg.AsyncConnection[Any], schema: str, name: str, tenant_id: str, user_id: str | None
) -> tuple[int, str]:
    """(rows, md5 of the rows' md5s in key order) of one tenant's (or user's) rows."""
    spec = next(s for s in DIGESTED if s[0] == name)
    _, key, left_out, extra = spec
    stored = [c for c in await columns(conn, schema, name) if c not in left_out]
    parts = [sql.SQL("r.{}").format(sql.Identifier(c)) for c in stored]
    parts += [sql.SQL(e).format(skills=table(schema, "skills")) for e in extra]
    where = sql.SQL("r.tenant_id = %(tenant)s AND (%(user)s::text IS NULL OR r.user_id = %(user)s)")
    query = sql.SQL(
        "SELECT count(*), coalesce(md5(string_agg(md5(ROW({parts})::text), '' ORDER BY r.{key}::text COLLATE \"C\")),"
        " '') FROM {t} AS r WHERE {where}"
    ).format(parts=sql.SQL(", ").join(parts), key=sql.Identifier(key), t=table(schema, name), where=where)
    await conn.execute("SELECT set_config('TimeZone', 'UTC', true)")
    cur = await conn.execute(query, {"tenant": tenant_id, "user": user_id})
    row = await cur.fetchone()
    assert row is not None
    return int(row[0]), str(row[1])
