"""Access statistics of memories: what retrieval returned is counted (it feeds forgetting)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg


async def record_access(
    conn: psycopg.AsyncConnection[Any], *, episodes: Sequence[uuid.UUID], facts: Sequence[uuid.UUID]
) -> None:
    """Access statistics of the current tenant's memories (feeds forgetting)."""
    if episodes:
        await conn.execute(
            "UPDATE episodes SET access_count = access_count + 1, last_accessed_at = now()"
            " WHERE event_id = ANY(%s::uuid[])",
            (list(episodes),),
        )
    if facts:
        await conn.execute(
            "UPDATE facts SET access_count = access_count + 1, last_accessed_at = now()"
            " WHERE fact_id = ANY(%s::uuid[])",
            (list(facts),),
        )
