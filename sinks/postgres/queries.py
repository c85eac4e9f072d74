"""Read queries over episodic memory. Every value is a bind parameter; the only composed
SQL is the vector cast's dimension, an int checked here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memstream.settings import VectorIndex

_SCOPE = """
    tenant_id = %(tenant_id)s
    AND user_id = %(user_id)s
    AND (%(project_id)s::text IS NULL OR project_id = %(project_id)s OR project_id IS NULL)
    AND (expires_at IS NULL OR expires_at > now())
    AND archived_at IS NULL
"""

_COLUMNS = """
    event_id, agent_id, session_id, project_id, role, content, memory_type, importance,
    tags, metadata, created_at
"""


@dataclass(frozen=True)
class EpisodeScope:
    tenant_id: str
    user_id: str
    project_id: str | None


def _vector_query(strategy: VectorIndex, dim: int) -> sql.Composed:
    if not 0 < dim <= 16_000:
        raise ValueError(f"implausible vector dimension {dim}")
    distance: sql.Composable
    if strategy == "hnsw":
        # Must match the partial expression index (see sinks/postgres/vector_index.py).
        distance = sql.SQL("embedding::vector({dim}) <=> %(embedding)s::vector({dim})").format(dim=sql.Literal(dim))
    else:
        distance = sql.SQL("embedding <=> %(embedding)s")
    return sql.SQL(
        "SELECT {cols}, {distance} AS distance FROM episodes"
        " WHERE {scope} AND embedding_model = %(model)s"
        " ORDER BY {distance} LIMIT %(limit)s"
    ).format(cols=sql.SQL(_COLUMNS), distance=distance, scope=sql.SQL(_SCOPE))


_TEXT_QUERY = sql.SQL(
    "SELECT {cols}, ts_rank_cd(tsv, query) AS text_rank"
    " FROM episodes, websearch_to_tsquery('english', %(text)s) AS query"
    " WHERE {scope} AND tsv @@ query"
    " ORDER BY text_rank DESC, created_at DESC LIMIT %(limit)s"
).format(cols=sql.SQL(_COLUMNS), scope=sql.SQL(_SCOPE))


async def vector_candidates(
    conn: psycopg.AsyncConnection[Any],
    scope: EpisodeScope,
    embedding: npt.NDArray[np.float32],
    *,
    model: str,
    limit: int,
    strategy: VectorIndex,
) -> list[dict[str, Any]]:
    """Nearest episodes by cosine distance, nearest first."""
    params = {**scope.__dict__, "embedding": embedding, "model": model, "limit": limit}
    async with conn.transaction():
        if strategy == "hnsw":
            # Under filters (and RLS) a plain HNSW scan returns too few rows (FACTS.md).
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        async with conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(_vector_query(strategy, int(embedding.shape[0])), params)
            return await cur.fetchall()


async def text_candidates(
    conn: psycopg.AsyncConnection[Any], scope: EpisodeScope, text: str, *, limit: int
) -> list[dict[str, Any]]:
    """Episodes matching the words of ``text``, best full-text rank first."""
    params = {**scope.__dict__, "text": text, "limit": limit}
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_TEXT_QUERY, params)
        return await cur.fetchall()
