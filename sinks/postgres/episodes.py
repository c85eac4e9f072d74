"""The episodic-memory sink: one embedded, full-text-indexed row per turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.types.json import Jsonb

from schemas.turns import Turn
from sinks.postgres.staging import StagedInsert

EPISODES = StagedInsert(
    table="episodes",
    columns=(
        "tenant_id",
        "event_id",
        "agent_id",
        "user_id",
        "project_id",
        "session_id",
        "role",
        "content",
        "token_count",
        "importance",
        "tags",
        "metadata",
        "embedding",
        "embedding_model",
        "embedding_dim",
        "created_at",
    ),
    types=(
        "text",
        "uuid",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "int4",
        "float4",
        "text[]",
        "jsonb",
        "vector",
        "text",
        "int4",
        "timestamptz",
    ),
)

DEFAULT_IMPORTANCE = 0.5


@dataclass(frozen=True, slots=True)
class Episode:
    turn: Turn
    embedding: npt.NDArray[np.float32]
    token_count: int


async def upsert_episodes(
    conn: psycopg.AsyncConnection[Any], episodes: Sequence[Episode], *, model: str
) -> int:
    """Insert episodes keyed by (tenant, event id); existing ones are left alone."""
    rows = (
        (
            e.turn.tenant_id,
            e.turn.event_id,
            e.turn.agent_id,
            e.turn.user_id,
            e.turn.project_id,
            e.turn.session_id,
            e.turn.role,
            e.turn.content,
            e.token_count,
            DEFAULT_IMPORTANCE,
            list(e.turn.tags),
            Jsonb(dict(e.turn.metadata)),
            e.embedding,
            model,
            int(e.embedding.shape[0]),
            e.turn.event_time,
        )
        for e in episodes
    )
    return await EPISODES.write(conn, rows)
