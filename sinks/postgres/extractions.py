"""Recorded extraction results: what an LLM extracted from an event, by extractor version.

The long-term memory worker records every LLM extraction (keyed by tenant, event id and the
extractor's versioned name); a redelivered event or a replay of the event log then reuses the
recorded facts instead of calling the model again. Callers act for the tenant (``act_as``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg.types.json import Jsonb

from memstream.extraction.types import Category, ExtractedFact, Scope, Triple


@dataclass(frozen=True)
class Extraction:
    event_id: uuid.UUID
    #: Who made the facts: the extractor, or the offline fallback when its answer was unusable.
    produced_by: str
    facts: list[ExtractedFact]


def facts_to_json(facts: Sequence[ExtractedFact]) -> list[dict[str, Any]]:
    return [
        {
            "entity": f.entity, "category": f.category, "scope": f.scope, "project_id": f.project_id,
            "summary": f.summary, "importance": f.importance,
            "triples": [[t.subject, t.predicate, t.object] for t in f.triples],
        }
        for f in facts
    ]  # fmt: skip


def facts_from_json(data: Sequence[dict[str, Any]]) -> list[ExtractedFact]:
    return [
        ExtractedFact(
            entity=str(f["entity"]), category=cast(Category, f["category"]), scope=cast(Scope, f["scope"]),
            project_id=f["project_id"], summary=str(f["summary"]), importance=float(f["importance"]),
            triples=tuple(Triple(str(s), str(p), str(o)) for s, p, o in f["triples"]),
        )
        for f in data
    ]  # fmt: skip


async def recorded_extractions(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, event_ids: Sequence[uuid.UUID], extractor: str
) -> dict[uuid.UUID, Extraction]:
    """The recorded results of ``extractor`` for these events of the current tenant."""
    if not event_ids:
        return {}
    cur = await conn.execute(
        "SELECT event_id, produced_by, facts FROM extractions"
        " WHERE tenant_id = %s AND extractor = %s AND event_id = ANY(%s)",
        (tenant_id, extractor, list(event_ids)),
    )
    return {row[0]: Extraction(row[0], row[1], facts_from_json(row[2])) for row in await cur.fetchall()}


_INSERT = (
    "INSERT INTO extractions (tenant_id, event_id, extractor, produced_by, facts) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (tenant_id, event_id, extractor)"
)
_KEEP = _INSERT + " DO NOTHING"
_REPLACE = _INSERT + (
    " DO UPDATE SET produced_by = EXCLUDED.produced_by, facts = EXCLUDED.facts, recorded_at = clock_timestamp()"
)


async def record_extractions(
    conn: psycopg.AsyncConnection[Any],
    tenant_id: str,
    extractor: str,
    extractions: Sequence[Extraction],
    *,
    replace: bool = False,
) -> None:
    """Record results of the current tenant; an existing record is kept unless ``replace``
    (a replay that re-extracts on purpose)."""
    if not extractions:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            _REPLACE if replace else _KEEP,
            [(tenant_id, e.event_id, extractor, e.produced_by, Jsonb(facts_to_json(e.facts))) for e in extractions],
        )
