"""The vector-index strategy of episodic memory, chosen by measurement (see README).

``exact``: no ANN index; a query scans one user's rows (through ``episodes_owner``)
and computes exact distances. Ingest is not slowed by index maintenance.
``hnsw``: a partial HNSW index per embedding model, on ``embedding::vector(dim)``.
``auto`` (the default): the HNSW index, used only for users with ``hnsw_min_episodes`` or
more episodes (``choose_scan``); smaller users are scanned exactly.
"""

from __future__ import annotations

import hashlib
import logging

import psycopg
from psycopg import sql

from memstream.settings import VectorIndex

log = logging.getLogger(__name__)

_PREFIX = "episodes_hnsw_"


def index_name(model: str) -> str:
    return _PREFIX + hashlib.sha1(model.encode()).hexdigest()[:12]


def ensure_vector_index(owner_url: str, *, strategy: VectorIndex, model: str, dim: int) -> None:
    """Create (hnsw) or drop (exact) the ANN index; idempotent, never blocks writers."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        existing = {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'episodes' AND indexname LIKE %s",
                (_PREFIX + "%",),
            )
        }
        wanted = {index_name(model)} if strategy in ("hnsw", "auto") else set()
        for name in sorted(existing - wanted):
            log.info("dropping vector index %s (strategy is %s)", name, strategy)
            conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        for name in sorted(wanted - existing):
            log.info("building HNSW index %s for %s (%d-d)", name, model, dim)
            conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON episodes"
                    " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
                    " WITH (m = 16, ef_construction = 64) WHERE embedding_model = {model}"
                ).format(name=sql.Identifier(name), dim=sql.Literal(int(dim)), model=sql.Literal(model))
            )
