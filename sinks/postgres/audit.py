"""The audit log: one append-only row per memory change or permission decision."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


async def append_audit(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    actor: str,
    action: str,
    subject: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> uuid.UUID:
    """Append one record for the current tenant (RLS refuses any other); returns its id."""
    cur = await conn.execute(
        "INSERT INTO audit_log (tenant_id, actor, action, subject, detail) VALUES (%s, %s, %s, %s, %s)"
        " RETURNING audit_id",
        (tenant_id, actor, action, subject, Jsonb(dict(detail or {}))),
    )
    row = await cur.fetchone()
    assert row is not None
    audit_id: uuid.UUID = row[0]
    return audit_id
