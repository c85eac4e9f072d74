"""LLM extraction results kept in Postgres (``sinks/postgres/extractions.py``) around the
extractor: reuse what was recorded for an event and extractor version, record what is new.

The live memory worker reuses and records (a redelivered event costs no second call); a
replay reuses by default and, with ``--re-extract``, calls the model again and replaces the
records. The offline extractor is deterministic and free, so nothing is recorded for it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TypeVar

from psycopg_pool import AsyncConnectionPool

from memstream.extraction.types import ExtractedFact
from schemas.turns import Turn
from sinks.postgres.extractions import Extraction, record_extractions, recorded_extractions
from sinks.postgres.tenancy import tenant_transaction

T = TypeVar("T")


class ExtractionRecords:
    def __init__(self, pool: AsyncConnectionPool, *, reuse: bool = True, replace: bool = False) -> None:
        self.pool = pool
        self.reuse = reuse
        self.replace = replace

    async def lookup(self, turns: Sequence[Turn], extractor: str) -> dict[uuid.UUID, Extraction]:
        """What ``extractor`` made of these turns before (nothing when reuse is off)."""
        if not self.reuse:
            return {}
        found: dict[uuid.UUID, Extraction] = {}
        for tenant, ids in sorted(_by_tenant((t, t.event_id) for t in turns).items()):
            async with tenant_transaction(self.pool, tenant, actor="worker") as conn:
                found.update(await recorded_extractions(conn, tenant, ids, extractor))
        return found

    async def record(self, made: Sequence[tuple[Turn, list[ExtractedFact], str]], extractor: str) -> None:
        """Record (turn, facts, produced_by) results of ``extractor``."""
        by_tenant = _by_tenant((turn, Extraction(turn.event_id, by, facts)) for turn, facts, by in made)
        for tenant, extractions in sorted(by_tenant.items()):
            async with tenant_transaction(self.pool, tenant, actor="worker") as conn:
                await record_extractions(conn, tenant, extractor, extractions, replace=self.replace)


def _by_tenant(items: Iterable[tuple[Turn, T]]) -> dict[str, list[T]]:
    grouped: dict[str, list[T]] = defaultdict(list)
    for turn, value in items:
        grouped[turn.tenant_id].append(value)
    return grouped
