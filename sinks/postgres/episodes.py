"""The episodic-memory sink: one embedded, full-text-indexed row per turn, audited."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.types.json import Jsonb

from schemas.turns import Turn
from sinks.postgres.audit import append_audit
from sinks.postgres.staging import StagedInsert
from sinks.postgres.tenancy import act_as

#: The tenant's text-search configuration, else the deployment's, else english (evaluated once
#: per tenant and batch; the insert trigger of migration 0005 does the same for single rows).
TENANT_TEXT_CONFIG = (
    "(SELECT coalesce((SELECT text_search_config FROM tenant_settings WHERE tenant_id = %(tenant)s),"
    " nullif(current_setting('memstream.text_search_config', true), '')::regconfig, 'english'::regconfig))"
)

EPISODES = StagedInsert.of(
    "episodes",
    [
        ("tenant_id", "text"),
        ("event_id", "uuid"),
        ("agent_id", "text"),
        ("user_id", "text"),
        ("project_id", "text"),
        ("session_id", "text"),
        ("role", "text"),
        ("memory_type", "text"),
        ("content", "text"),
        ("token_count", "int4"),
        ("importance", "float4"),
        ("tags", "text[]"),
        ("metadata", "jsonb"),
        ("shared", "bool"),
        ("embedding", "vector"),
        ("embedding_model", "text"),
        ("embedding_dim", "int4"),
        ("created_at", "timestamptz"),
        ("received_at", "timestamptz"),
    ],
    time_column="received_at",
    computed=(("text_config", TENANT_TEXT_CONFIG),),
    skip_forgotten_episodes=True,
    staged_only=("received_at",),
)

DEFAULT_IMPORTANCE = 0.5


@dataclass(frozen=True, slots=True)
class Episode:
    turn: Turn
    embedding: npt.NDArray[np.float32]
    token_count: int
    importance: float = DEFAULT_IMPORTANCE
    #: episodic (a turn), procedural (a lesson from a failure), summary (compaction)
    memory_type: str = "episodic"


def _row(e: Episode, model: str) -> tuple[Any, ...]:
    t = e.turn
    return (
        t.tenant_id, t.event_id, t.agent_id, t.user_id, t.project_id, t.session_id, t.role, e.memory_type,
        t.content, e.token_count, e.importance, list(t.tags), Jsonb(dict(t.metadata)), t.shared, e.embedding,
        model, int(e.embedding.shape[0]), t.event_time, t.received_at,
    )  # fmt: skip


async def upsert_episodes(
    conn: psycopg.AsyncConnection[Any], episodes: Sequence[Episode], *, model: str
) -> dict[str, list[uuid.UUID]]:
    """Insert episodes keyed by (tenant, event id); existing ones (and erased users', and
    episodes forgotten on their own) are left alone. Each tenant's new memory is recorded in its
    audit log in the same transaction. Returns the event ids inserted, per tenant."""
    rows = (_row(e, model) for e in episodes)
    agents: dict[uuid.UUID, str] = {e.turn.event_id: e.turn.agent_id for e in episodes}
    kinds: dict[uuid.UUID, str] = {e.turn.event_id: e.memory_type for e in episodes}
    async with conn.transaction():
        inserted = await EPISODES.write(conn, rows)
        for tenant, ids in inserted.items():
            await act_as(conn, tenant, actor="worker")
            await append_audit(
                conn,
                tenant_id=tenant,
                actor="worker",
                action="memory.insert",
                detail={
                    "memory_type": sorted({kinds[i] for i in ids}),
                    "count": len(ids),
                    "event_ids": [str(i) for i in ids],
                    "agents": sorted({agents[i] for i in ids}),
                    "embedding_model": model,
                },
            )
    return inserted
