"""Procedural memory: skills with named steps, attempts, successes and the latest feedback."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from sinks.postgres.audit import append_audit


@dataclass(frozen=True)
class SkillRun:
    tenant_id: str
    event_id: uuid.UUID
    user_id: str
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


_SKILL_NAMESPACE = uuid.UUID("2f0b8e52-93c4-4d1a-b6e7-6d656d736b6c")


def derived_skill_id(tenant_id: str, name: str) -> uuid.UUID:
    """Deterministic: a rebuild from the event log gives a skill the same id."""
    return uuid.uuid5(_SKILL_NAMESPACE, f"{tenant_id}\x1f{name}")


async def record_run(
    conn: psycopg.AsyncConnection[Any], run: SkillRun, *, embedding: npt.NDArray[np.float32], model: str
) -> bool:
    """Count one outcome (current tenant); False when it was counted before (a redelivery)."""
    name = normalise_skill(run.skill)
    cur = await conn.execute(
        "INSERT INTO skills (tenant_id, skill_id, name, description, steps, embedding, embedding_model)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING skill_id",
        (run.tenant_id, derived_skill_id(run.tenant_id, name), name, run.skill, Jsonb(run.steps), embedding, model),
    )
    row = await cur.fetchone()
    assert row is not None
    skill_id = row[0]
    cur = await conn.execute(
        "INSERT INTO skill_runs (tenant_id, event_id, skill_id, user_id, success, feedback, at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (run.tenant_id, run.event_id, skill_id, run.user_id, run.success, run.feedback, run.at),
    )
    if cur.rowcount == 0:
        return False
    await conn.execute(
        "UPDATE skills SET attempts = attempts + 1, successes = successes + %s,"
        " last_used_at = greatest(coalesce(last_used_at, %s), %s),"
        " last_feedback = coalesce(%s, last_feedback),"
        " steps = CASE WHEN %s::jsonb = '[]'::jsonb THEN steps ELSE %s::jsonb END"
        " WHERE tenant_id = %s AND skill_id = %s",
        (int(run.success), run.at, run.at, run.feedback, Jsonb(run.steps), Jsonb(run.steps), run.tenant_id,
         skill_id),
    )  # fmt: skip
    await append_audit(
        conn, tenant_id=run.tenant_id, actor="worker", action="memory.skill_run", subject=str(skill_id),
        detail={"memory_type": "procedural", "skill": name, "success": run.success,
                "event_id": str(run.event_id), "has_feedback": run.feedback is not None},
    )  # fmt: skip
    return True


_BEST = """
SELECT skill_id, name, description, steps, attempts, successes, last_used_at, last_feedback,
       (successes + 1.0) / (attempts + 2.0) AS success_rate,
       1 - (embedding <=> %(embedding)s) AS similarity
FROM skills WHERE embedding_model = %(model)s
ORDER BY (1 - (embedding <=> %(embedding)s)) * ((successes + 1.0) / (attempts + 2.0)) DESC
LIMIT %(limit)s
"""


async def best_skills(
    conn: psycopg.AsyncConnection[Any], embedding: npt.NDArray[np.float32], *, model: str, limit: int
) -> list[SkillScore]:
    """Skills for a task, by similarity times the smoothed success rate (successes+1)/(attempts+2)."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_BEST, {"embedding": embedding, "model": model, "limit": limit})
        rows = await cur.fetchall()
    return [_score(r) for r in rows]


def _score(r: dict[str, Any]) -> SkillScore:
    similarity, rate = float(r["similarity"]), float(r["success_rate"])
    return SkillScore(
        skill_id=r["skill_id"], name=r["name"], description=r["description"], steps=list(r["steps"]),
        attempts=r["attempts"], successes=r["successes"], success_rate=rate, similarity=similarity,
        score=similarity * rate, last_used_at=r["last_used_at"], last_feedback=r["last_feedback"],
    )  # fmt: skip
