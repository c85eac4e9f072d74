"""Access statistics of memories: what retrieval returned is counted (it feeds forgetting).

They live in ``memory_access`` (migration 0013), one narrow row per memory, not on the
memory's own row: an update of an episode row rewrote it and added an entry to every index
of the table. A memory deleted on purpose takes its row along (``forget_access``,
``erase_access``); a replay's switch, which deletes and copies memories back, does not touch
them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

import psycopg
from psycopg import sql

AccessKind = Literal["episode", "fact"]

#: One upsert per kind, composed once: the user comes from the memory itself (an id the tenant
#: does not hold, or no longer holds, counts nothing), under the reader's row-level security.
_RECORD = {
    "episode": "SELECT tenant_id, event_id, user_id FROM episodes WHERE event_id = ANY(%(ids)s::uuid[])",
    "fact": "SELECT tenant_id, fact_id, user_id FROM facts WHERE fact_id = ANY(%(ids)s::uuid[])",
}
_UPSERT = {
    kind: sql.SQL(
        "INSERT INTO memory_access AS a (tenant_id, kind, memory_id, user_id, access_count, last_accessed_at)"
        " SELECT m.tenant_id, %(kind)s, m.id, m.user_id, 1, now() FROM ({source}) AS m(tenant_id, id, user_id)"
        " ORDER BY m.id"
        " ON CONFLICT (tenant_id, kind, memory_id)"
        " DO UPDATE SET access_count = a.access_count + 1, last_accessed_at = excluded.last_accessed_at"
    )
    .format(source=sql.SQL(source))
    .as_string(None)
    for kind, source in _RECORD.items()
}


async def record_access(
    conn: psycopg.AsyncConnection[Any], *, episodes: Sequence[uuid.UUID], facts: Sequence[uuid.UUID]
) -> None:
    """Count one read of each of the current tenant's memories (feeds forgetting)."""
    for kind, ids in (("episode", episodes), ("fact", facts)):
        if ids:
            await conn.execute(_UPSERT[kind], {"kind": kind, "ids": list(ids)})


async def forget_access(conn: psycopg.AsyncConnection[Any], kind: AccessKind, ids: Sequence[uuid.UUID]) -> None:
    """The statistics of memories of the current tenant that were just deleted."""
    if ids:
        await conn.execute(
            "DELETE FROM memory_access WHERE kind = %s AND memory_id = ANY(%s::uuid[])", (kind, list(ids))
        )


async def erase_access(conn: psycopg.AsyncConnection[Any], user_id: str) -> int:
    """Every statistic of a user of the current tenant (their erasure)."""
    cur = await conn.execute("DELETE FROM memory_access WHERE user_id = %s", (user_id,))
    return cur.rowcount
