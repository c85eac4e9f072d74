"""The vector-index strategy of episodic memory, chosen by measurement (docs/memory-and-retrieval.md).

``exact``: no ANN index; a query scans one user's rows (through ``episodes_owner``)
and computes exact distances. Ingest is not slowed by index maintenance.
``hnsw``: a partial HNSW index per embedding model, on ``embedding::vector(dim)``.
``auto`` (the default): no index until some user has ``hnsw_min_episodes`` episodes (the
index slows every insert: 27 % at 30,000 rows, docs/benchmarks.md); then ``memstream
migrate``, ``memstream up`` or the memory worker's hourly maintenance builds it, and the
gateway uses it for the users past the line (``choose_scan``), scanning smaller ones exactly.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import psycopg
from psycopg import sql

from memstream.settings import VectorIndex

log = logging.getLogger(__name__)

_PREFIX = "episodes_hnsw_"


def index_name(model: str) -> str:
    return _PREFIX + hashlib.sha1(model.encode()).hexdigest()[:12]


#: The most live episodes any one user has (every tenant: the owner reads the totals unfiltered).
_LARGEST_USER = (
    "SELECT coalesce(max(n), 0) FROM (SELECT sum(episodes) AS n FROM episode_counts GROUP BY tenant_id, user_id) AS s"
)
#: Whether a built (valid) index of that name exists: what a reader may use.
VALID_INDEX = (
    "SELECT coalesce(bool_or(i.indisvalid), false) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE c.relname = %s"
)


def ensure_vector_index(owner_url: str, *, strategy: VectorIndex, model: str, dim: int, min_episodes: int = 0) -> bool:
    """Create (hnsw, and auto once a user has ``min_episodes``) or drop (exact) the ANN index;
    idempotent, never blocks writers. Under auto an index once built stays (a user that
    shrinks below the line would otherwise rebuild it on the way back). Returns whether the
    index of ``model`` is there to use."""
    name = index_name(model)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        existing = {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'episodes' AND indexname LIKE %s",
                (_PREFIX + "%",),
            )
        }
        if strategy == "exact":
            wanted: set[str] = set()
        elif strategy == "hnsw" or name in existing:
            wanted = {name}
        else:
            row = conn.execute(_LARGEST_USER).fetchone()
            largest = int(row[0]) if row else 0
            wanted = {name} if largest >= min_episodes else set()
            if wanted:
                log.info("a user has %d episodes (auto builds HNSW from %d)", largest, min_episodes)
        for other in sorted(existing - wanted - ({name} if strategy == "auto" else set())):
            log.info("dropping vector index %s (strategy is %s)", other, strategy)
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(other)))
        for new in sorted(wanted - existing):
            log.info("building HNSW index %s for %s (%d-d)", new, model, dim)
            conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON episodes"
                    " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
                    " WITH (m = 16, ef_construction = 64) WHERE embedding_model = {model}"
                ).format(name=sql.Identifier(new), dim=sql.Literal(int(dim)), model=sql.Literal(model))
            )
        row = conn.execute(VALID_INDEX, (name,)).fetchone()
        return bool(row and row[0])


class IndexWatch:
    """Whether the HNSW index of ``model`` is built and valid, as the gateway sees it: read
    again every ``RECHECK_S`` while it is not (an index built by maintenance is used within
    that), every ``ttl_s`` once it is (an operator may drop it)."""

    RECHECK_S = 5.0

    def __init__(self, model: str, *, ttl_s: float = 60.0) -> None:
        self.name = index_name(model)
        self.ttl_s = ttl_s
        self._ready = False
        self._until = 0.0

    async def ready(self, conn: psycopg.AsyncConnection[Any]) -> bool:
        now = time.monotonic()
        if now >= self._until:
            cur = await conn.execute(VALID_INDEX, (self.name,))
            row = await cur.fetchone()
            self._ready = bool(row and row[0])
            self._until = now + (self.ttl_s if self._ready else self.RECHECK_S)
        return self._ready
