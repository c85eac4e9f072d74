"""``memstream audit export``: a tenant's audit log over a time range, as Avro or JSON lines."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Literal

import orjson
import psycopg
from fastavro.write import Writer

from schemas.registry import AUDIT_RECORD, newest
from sinks.postgres.queries.audit import AuditRecord, read_audit
from sinks.postgres.tenancy import act_as
from streams.audit_relay import to_avro

Format = Literal["jsonl", "avro"]


async def records(
    database_url: str, tenant_id: str, *, since: datetime | None, until: datetime | None, page: int = 1000
) -> AsyncIterator[AuditRecord]:
    """Every audit record of the tenant in [since, until), in order, page by page."""
    after = 0
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        while True:
            async with conn.transaction():
                await act_as(conn, tenant_id, actor="audit-export")
                chunk = await read_audit(conn, since=since, until=until, after_seq=after, limit=page)
            for record in chunk:
                yield record
            if len(chunk) < page:
                return
            after = chunk[-1].seq


def _open_private(out: Path) -> BinaryIO:
    """``out`` for writing, readable by its owner only (0600): the audit log names every tenant's
    users, agents and changes. An existing file is truncated and tightened; a pipe or a device
    (``/dev/stdout``) is written as it is."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _jsonl(record: AuditRecord) -> bytes:
    body = {**record.__dict__, "audit_id": str(record.audit_id), "at": record.at.isoformat()}
    return orjson.dumps(body) + b"\n"


async def export(
    database_url: str,
    tenant_id: str,
    out: Path,
    *,
    fmt: Format,
    since: datetime | None = None,
    until: datetime | None = None,
) -> int:
    """Stream the records to ``out``; returns how many were written."""
    count = 0
    with _open_private(out) as fh:
        avro = Writer(fh, newest(AUDIT_RECORD).parsed, codec="deflate") if fmt == "avro" else None
        async for record in records(database_url, tenant_id, since=since, until=until):
            if avro is not None:
                avro.write(to_avro(record))  # an object-container file: the schema is in its header
            else:
                fh.write(_jsonl(record))
            count += 1
        if avro is not None:
            avro.flush()
    return count


def run_export(
    database_url: str,
    tenant_id: str,
    out: Path,
    *,
    fmt: Format,
    since: datetime | None,
    until: datetime | None,
) -> int:
    return asyncio.run(export(database_url, tenant_id, out, fmt=fmt, since=since, until=until))
