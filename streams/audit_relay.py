"""The audit relay: moves audit records from the Postgres outbox to ``memstream.audit.v1``.

Audit rows are written in the same transaction as the change they record, and a trigger
lists each in ``audit_outbox``. The relay (a timer on every worker; an advisory lock
lets one run at a time, so records leave in ``seq`` order) reads a page of the outbox,
loads the records tenant by tenant under RLS, publishes them keyed by tenant, waits for
the broker, and only then deletes them from the outbox. A crash in between publishes
them again: consumers may see an ``audit_id`` twice, never miss one.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from typing import Any

import faust
import orjson
from psycopg_pool import AsyncConnectionPool

from schemas.codec import AvroCodec
from sinks.postgres.queries.audit import AuditRecord, records_by_seq
from sinks.postgres.tenancy import act_as
from streams.metrics import WorkerMetrics

log = logging.getLogger(__name__)

_RELAY_LOCK = 0x6D736175  # "msau"


def detail_json(detail: Any) -> str:
    """The detail as JSON text, whatever numbers it holds (jsonb keeps integers beyond 64 bits,
    which orjson refuses: the standard library writes them)."""
    try:
        return orjson.dumps(detail).decode()
    except TypeError:
        return json.dumps(detail, default=str)


def to_avro(record: AuditRecord) -> dict[str, Any]:
    return {
        "audit_id": str(record.audit_id),
        "tenant_id": record.tenant_id,
        "seq": record.seq,
        "at": record.at,
        "actor": record.actor,
        "action": record.action,
        "subject": record.subject,
        "detail": detail_json(record.detail),
    }


class AuditRelay:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        topic: faust.TopicT,
        codec: AvroCodec,
        metrics: WorkerMetrics,
        *,
        page: int = 500,
    ) -> None:
        self.pool = pool
        self.topic = topic
        self.codec = codec
        self.metrics = metrics
        self.page = page

    async def relay_once(self) -> int:
        """Publish one page of the outbox; returns how many records left it."""
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_RELAY_LOCK,))
            locked = await cur.fetchone()
            if not locked or not locked[0]:
                return 0  # another worker is relaying
            cur = await conn.execute("SELECT seq, tenant_id FROM audit_outbox ORDER BY seq LIMIT %s", (self.page,))
            pending = await cur.fetchall()
            if not pending:
                return 0
            by_tenant: dict[str, list[int]] = defaultdict(list)
            for seq, tenant in pending:
                by_tenant[tenant].append(seq)
            records: list[AuditRecord] = []
            for tenant, seqs in by_tenant.items():
                await act_as(conn, tenant, actor="audit-relay")
                records.extend(await records_by_seq(conn, seqs))
            records.sort(key=lambda r: r.seq)
            acks = [
                await self.topic.send(key=r.tenant_id.encode(), value=self.codec.encode(to_avro(r))) for r in records
            ]
            for ack in acks:
                await ack
            await conn.execute("DELETE FROM audit_outbox WHERE seq = ANY(%s)", ([seq for seq, _ in pending],))
        self.metrics.audit_published.inc(len(records))
        return len(pending)
