"""Procedural memory: a user's skills, and every outcome (run) with its steps and feedback;
attempts, successes, the latest steps and feedback are the runs a reader may see, aggregated."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from sinks.postgres.audit import append_audit


@dataclass(frozen=True)
class SkillRun:
    tenant_id: str
    event_id: uuid.UUID
    user_id: str
    agent_id: str
    #: Visible to the tenant's other agents (else only to ``agent_id``), like the turn it came in.
    shared: bool
    skill: str
    success: bool
    feedback: str | None
    steps: list[str]
    at: datetime


@dataclass(frozen=True)
class SkillScore:
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str]
    attempts: int
    successes: int
    success_rate: float
    similarity: float
    score: float
    last_used_at: datetime | None
    last_feedback: str | None


def normalise_skill(name: str) -> str:
    return " ".join(name.lower().replace("_", " ").replace("-", " ").split())


def derived_skill_id(tenant_id: str, user_id: str, name: str) -> uuid.UUID:
    """Deterministic (= SQL ``memstream_skill_id``): a rebuild from the event log gives a skill the same id."""
    return uuid.UUID(hashlib.md5(f"{tenant_id}\x1f{user_id}\x1f{name}".encode(), usedforsecurity=False).hexdigest())


async def record_run(
    conn: psycopg.AsyncConnection[Any], run: SkillRun, *, embedding: npt.NDArray[np.float32], model: str
) -> bool:
    """Record one outcome (current tenant); False when it was recorded before (a redelivery)."""
    name = normalise_skill(run.skill)
    skill_id = derived_skill_id(run.tenant_id, run.user_id, name)
    await conn.execute(
        "INSERT INTO skills (tenant_id, skill_id, user_id, name, description, embedding, embedding_model)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (tenant_id, user_id, name) DO NOTHING",
        (run.tenant_id, skill_id, run.user_id, name, run.skill, embedding, model),
    )
    cur = await conn.execute(
        "INSERT INTO skill_runs"
        " (tenant_id, event_id, skill_id, user_id, agent_id, shared, success, feedback, steps, at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (run.tenant_id, run.event_id, skill_id, run.user_id, run.agent_id, run.shared, run.success, run.feedback,
         Jsonb(run.steps), run.at),
    )  # fmt: skip
    if cur.rowcount == 0:
        return False
    await append_audit(
        conn, tenant_id=run.tenant_id, actor="worker", action="memory.skill_run", subject=str(skill_id),
        detail={"memory_type": "procedural", "success": run.success, "event_id": str(run.event_id),
                "agents": [run.agent_id], "has_feedback": run.feedback is not None},
    )  # fmt: skip
    return True


#: A user's skills with their record as the reader may see it: the runs row-level security
#: lets through (an agent-bound reader: its own and shared ones), aggregated. A skill with
#: no visible run is not there at all. Used as a table: ``FROM {VISIBLE_SKILLS} ...``.
VISIBLE_SKILLS = """(
SELECT k.tenant_id, k.skill_id, k.user_id, k.name, k.description, k.embedding, k.embedding_model, k.created_at,
       a.attempts, a.successes, a.last_used_at, a.last_feedback, coalesce(a.steps, '[]'::jsonb) AS steps
FROM skills k CROSS JOIN LATERAL (
    SELECT count(*) AS attempts, count(*) FILTER (WHERE r.success) AS successes, max(r.at) AS last_used_at,
           (array_agg(r.feedback ORDER BY r.at DESC) FILTER (WHERE r.feedback IS NOT NULL))[1] AS last_feedback,
           (array_agg(r.steps ORDER BY r.at DESC) FILTER (WHERE r.steps <> '[]'::jsonb))[1] AS steps
    FROM skill_runs r WHERE r.tenant_id = k.tenant_id AND r.skill_id = k.skill_id) a
WHERE a.attempts > 0
) AS skills"""

_BEST = sql.SQL("""
SELECT skill_id, name, description, steps, attempts, successes, last_used_at, last_feedback,
       (successes + 1.0) / (attempts + 2.0) AS success_rate,
       1 - (embedding <=> %(embedding)s) AS similarity
FROM {skills} WHERE user_id = %(user)s AND embedding_model = %(model)s
ORDER BY (1 - (embedding <=> %(embedding)s)) * ((successes + 1.0) / (attempts + 2.0)) DESC
LIMIT %(limit)s
""").format(skills=sql.SQL(VISIBLE_SKILLS))


async def best_skills(
    conn: psycopg.AsyncConnection[Any],
    embedding: npt.NDArray[np.float32],
    *,
    user_id: str,
    model: str,
    limit: int,
) -> list[SkillScore]:
    """The user's skills for a task, by similarity times the smoothed success rate (successes+1)/(attempts+2)."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_BEST, {"embedding": embedding, "user": user_id, "model": model, "limit": limit})
        rows = await cur.fetchall()
    return [_score(r) for r in rows]


def _score(r: dict[str, Any]) -> SkillScore:
    similarity, rate = float(r["similarity"]), float(r["success_rate"])
    return SkillScore(
        skill_id=r["skill_id"], name=r["name"], description=r["description"], steps=list(r["steps"]),
        attempts=r["attempts"], successes=r["successes"], success_rate=rate, similarity=similarity,
        score=similarity * rate, last_used_at=r["last_used_at"], last_feedback=r["last_feedback"],
    )  # fmt: skip
