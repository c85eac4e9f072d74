"""Queries over relational memory: neighbours and bounded multi-hop paths (recursive CTE)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import psycopg

Direction = Literal["out", "in", "both"]
MAX_DEPTH = 4

#: Walks current edges from an entity, never revisiting a node on the same path. Direction
#: "out" follows subject → object ("what does CloudRetail depend on"), "in" the reverse.
_WALK = """
WITH RECURSIVE walk(node, depth, path, hops) AS (
    SELECT %(entity)s::text, 0, ARRAY[%(entity)s::text], ARRAY[]::text[]
    UNION ALL
    SELECT nxt.node, w.depth + 1, w.path || nxt.node, w.hops || nxt.hop
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT e.object AS node, e.subject || ' -' || e.predicate || '-> ' || e.object AS hop
        FROM edges e
        WHERE %(out)s AND e.subject = w.node AND e.valid_to IS NULL
          AND (%(user)s::text IS NULL OR e.user_id = %(user)s)
        UNION
        SELECT e.subject, e.subject || ' -' || e.predicate || '-> ' || e.object
        FROM edges e
        WHERE %(in)s AND e.object = w.node AND e.valid_to IS NULL
          AND (%(user)s::text IS NULL OR e.user_id = %(user)s)
    ) nxt
    WHERE w.depth < %(depth)s AND NOT nxt.node = ANY(w.path)
)
SELECT node, depth, hops FROM (
    SELECT DISTINCT ON (node) node, depth, hops FROM walk WHERE depth > 0 ORDER BY node, depth, hops
) nearest ORDER BY depth, node LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Neighbor:
    entity: str
    depth: int
    #: The shortest path found, as "subject -predicate-> object" hops.
    path: list[str]


async def neighbors(
    conn: psycopg.AsyncConnection[Any],
    entity: str,
    *,
    depth: int,
    direction: Direction = "out",
    user_id: str | None = None,
    limit: int = 200,
) -> list[Neighbor]:
    """Entities reachable from ``entity`` within ``depth`` hops (current tenant, RLS)."""
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be 1-{MAX_DEPTH}")
    cur = await conn.execute(
        _WALK,
        {
            "entity": entity, "depth": depth, "user": user_id, "limit": limit,
            "out": direction in ("out", "both"), "in": direction in ("in", "both"),
        },
    )  # fmt: skip
    return [Neighbor(node, depth_, list(hops)) for node, depth_, hops in await cur.fetchall()]
