"""Reading the audit log: the current tenant's records in order, or by sequence number."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row


@dataclass(frozen=True)
class AuditRecord:
    tenant_id: str
    audit_id: uuid.UUID
    seq: int
    at: datetime
    actor: str
    action: str
    subject: str | None
    detail: dict[str, Any]


_SELECT = "SELECT tenant_id, audit_id, seq, at, actor, action, subject, detail FROM audit_log"
_RANGE = (
    _SELECT + " WHERE seq > %(after)s AND (%(since)s::timestamptz IS NULL OR at >= %(since)s)"
    " AND (%(until)s::timestamptz IS NULL OR at < %(until)s) ORDER BY seq LIMIT %(limit)s"
)
_BY_SEQ = _SELECT + " WHERE seq = ANY(%s) ORDER BY seq"


async def read_audit(
    conn: psycopg.AsyncConnection[Any],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    after_seq: int = 0,
    limit: int = 1000,
) -> list[AuditRecord]:
    """The current tenant's audit records in order (``seq``), optionally in a time range."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_RANGE, {"after": after_seq, "since": since, "until": until, "limit": limit})
        return [AuditRecord(**row) for row in await cur.fetchall()]


async def records_by_seq(conn: psycopg.AsyncConnection[Any], seqs: list[int]) -> list[AuditRecord]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_BY_SEQ, (seqs,))
        return [AuditRecord(**row) for row in await cur.fetchall()]
