"""Tool-permission rules: ordered ALLOW/BLOCK patterns per tool, per project or global."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg.rows import class_row

Effect = Literal["ALLOW", "BLOCK"]


@dataclass(frozen=True)
class Rule:
    rule_id: uuid.UUID
    project_id: str | None
    tool: str
    effect: Effect
    pattern: str
    position: int
    description: str
    created_at: datetime


_INSERT = (
    "INSERT INTO permission_rules (tenant_id, project_id, tool, effect, pattern, position, description)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " RETURNING rule_id, project_id, tool, effect, pattern, position, description, created_at"
)
_LIST = (
    "SELECT rule_id, project_id, tool, effect, pattern, position, description, created_at"
    " FROM permission_rules WHERE (%(tool)s::text IS NULL OR tool = %(tool)s)"
    " ORDER BY project_id NULLS LAST, tool, position, created_at"
)
#: A project's rules first (tier 2), then the tenant's global rules (tier 3), each in order.
_FOR_TOOL = (
    "SELECT rule_id, project_id, tool, effect, pattern, position, description, created_at"
    " FROM permission_rules WHERE tool = %(tool)s AND (project_id IS NULL OR project_id = %(project)s)"
    " ORDER BY project_id NULLS LAST, position, created_at LIMIT %(limit)s"
)


async def insert_rule(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    project_id: str | None,
    tool: str,
    effect: Effect,
    pattern: str,
    position: int,
    description: str,
) -> Rule:
    async with conn.cursor(row_factory=class_row(Rule)) as cur:
        await cur.execute(_INSERT, (tenant_id, project_id, tool, effect, pattern, position, description))
        rule = await cur.fetchone()
    assert rule is not None
    return rule


#: Rules of the tool in the new rule's scope (one project, or the global rules), and of the tenant.
_COUNT = (
    "SELECT count(*) FILTER (WHERE tool = %(tool)s AND project_id IS NOT DISTINCT FROM %(project)s),"
    " count(*) FROM permission_rules"
)


async def lock_rules(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> None:
    """Serialise rule changes of one tenant until the transaction ends, so that two
    concurrent additions cannot both pass the limits (``count_rules``)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"permission_rules\x1f{tenant_id}",))


async def count_rules(conn: psycopg.AsyncConnection[Any], *, tool: str, project_id: str | None) -> tuple[int, int]:
    """How many rules the tenant (of the transaction) has for ``tool`` in the scope of
    ``project_id`` (None: its global rules), and in all."""
    cur = await conn.execute(_COUNT, {"tool": tool, "project": project_id})
    row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def list_rules(conn: psycopg.AsyncConnection[Any], *, tool: str | None = None) -> list[Rule]:
    async with conn.cursor(row_factory=class_row(Rule)) as cur:
        await cur.execute(_LIST, {"tool": tool})
        return await cur.fetchall()


async def rules_for(
    conn: psycopg.AsyncConnection[Any], *, tool: str, project_id: str | None, limit: int = 500
) -> list[Rule]:
    """The rules one evaluation checks, in order: at most ``limit`` (the caller asks for one
    more than it will match, to know when there are too many)."""
    async with conn.cursor(row_factory=class_row(Rule)) as cur:
        await cur.execute(_FOR_TOOL, {"tool": tool, "project": project_id, "limit": limit})
        return await cur.fetchall()


async def delete_rule(conn: psycopg.AsyncConnection[Any], rule_id: uuid.UUID) -> bool:
    cur = await conn.execute("DELETE FROM permission_rules WHERE rule_id = %s", (rule_id,))
    return cur.rowcount > 0
