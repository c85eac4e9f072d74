"""Reading the audit log: the current tenant's records in order, by sequence number, or newest
first a page at a time (``GET /v1/audit``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
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


_RECENT = """
SELECT tenant_id, audit_id, seq, at, actor, action, subject, detail FROM audit_log
WHERE tenant_id = %(tenant)s
  AND (%(since)s::timestamptz IS NULL OR at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR at < %(until)s)
  AND (%(action)s::text IS NULL OR action = %(action)s)
  AND (%(prefix)s::text IS NULL OR starts_with(action, %(prefix)s))
  AND (%(user_ref)s::text IS NULL OR subject = %(user_ref)s OR detail->>'user_ref' = %(user_ref)s)
  {after}
ORDER BY at DESC, seq DESC LIMIT %(limit)s
"""
#: The page after a cursor: one range of the (tenant, at) index.
_AFTER = sql.SQL("AND (at, seq) < (%(after_at)s::timestamptz, %(after_seq)s::bigint)")
_RECENT_FIRST = sql.SQL(_RECENT).format(after=sql.SQL(""))
_RECENT_NEXT = sql.SQL(_RECENT).format(after=_AFTER)


async def recent_audit(
    conn: psycopg.AsyncConnection[Any],
    tenant_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    action: str | None = None,
    user_ref: str | None = None,
    after: tuple[datetime, int] | None = None,
    limit: int = 50,
) -> list[AuditRecord]:
    """The tenant's records newest first (by time, then sequence), strictly after ``after``
    (the previous page's last). ``action``: one action (``memory.delete``), or every action
    under a prefix ending in a dot (``permission.``). ``user_ref``: the records naming that
    user by reference (``memstream_user_ref``): an erasure, a consent, a forgotten memory."""
    exact, prefix = (None, action) if action is not None and action.endswith(".") else (action, None)
    params: dict[str, Any] = {
        "tenant": tenant_id, "since": since, "until": until, "action": exact, "prefix": prefix, "user_ref": user_ref,
        "limit": limit,
    }  # fmt: skip
    if after is not None:
        params.update(after_at=after[0], after_seq=after[1])
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_RECENT_FIRST if after is None else _RECENT_NEXT, params)
        return [AuditRecord(**row) for row in await cur.fetchall()]
