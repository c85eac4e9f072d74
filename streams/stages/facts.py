"""The fact sink: embeds facts (records of ``memstream.facts.v1``) and applies them to
versioned semantic memory and the graph (see ``sinks/postgres/facts.py``)."""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import cast

from memstream.extraction.types import Triple
from schemas.codec import AvroCodec
from schemas.errors import DecodeError
from sinks.postgres.facts import FactRecord, apply_facts
from sinks.postgres.tenancy import tenant_transaction
from streams.resources import MemoryResources
from streams.retry import Backoff, retry_until_done

log = logging.getLogger(__name__)


def decode_fact(codec: AvroCodec, raw: bytes) -> dict[str, object]:
    record = codec.decode(raw)
    if record["scope"] not in ("global", "project", "session") or not str(record["entity"]).strip():
        raise DecodeError(f"fact with scope {record['scope']!r} and entity {record['entity']!r}")
    return record


async def apply_batch(resources: MemoryResources, records: Sequence[dict[str, object]], backoff: Backoff) -> None:
    embedder = resources.embedder
    vectors = await retry_until_done(
        lambda: embedder.embed_owned([str(r["summary"]) for r in records], [str(r["tenant_id"]) for r in records]),
        what="embedding facts",
        backoff=backoff,
    )
    by_tenant: dict[str, list[FactRecord]] = defaultdict(list)
    for record, vector in zip(records, vectors, strict=True):
        by_tenant[str(record["tenant_id"])].append(_fact(record, vector))
    for tenant, facts in by_tenant.items():

        async def apply(tenant: str = tenant, facts: list[FactRecord] = facts) -> None:
            async with tenant_transaction(resources.pool, tenant, actor="worker") as conn:
                applied = await apply_facts(
                    conn,
                    facts,
                    model=embedder.model_name,
                    merge_threshold=resources.settings.fact_merge_threshold,
                )
            for result in applied:
                resources.metrics.facts.labels(action=result.action).inc()

        await retry_until_done(apply, what="facts sink", backoff=backoff, where=f"tenant {tenant}")


def _fact(record: dict[str, object], vector: object) -> FactRecord:
    triples = cast(list[dict[str, str]], record["triples"])
    return FactRecord(
        fact_id=cast(uuid.UUID, record["fact_id"]), tenant_id=str(record["tenant_id"]),
        user_id=str(record["user_id"]), agent_id=str(record["agent_id"]), session_id=str(record["session_id"]),
        project_id=cast(str | None, record["project_id"]), source_event_id=cast(uuid.UUID, record["source_event_id"]),
        observed_at=record["observed_at"],  # type: ignore[arg-type]
        entity=str(record["entity"]), category=str(record["category"]), scope=str(record["scope"]),
        summary=str(record["summary"]), importance=float(record["importance"]),  # type: ignore[arg-type]
        triples=tuple(Triple(t["subject"], t["predicate"], t["object"]) for t in triples),
        shared=bool(record["shared"]), extractor=str(record["extractor"]), embedding=vector,  # type: ignore[arg-type]
        received_at=record.get("received_at"),  # type: ignore[arg-type]
    )  # fmt: skip
