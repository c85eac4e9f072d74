"""Reading procedural memory: a user's skills as the reader may see them, best first for a task, or
all of them by name, a page at a time."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.rows import dict_row


def success_rate(successes: int, attempts: int) -> float:
    """What a skill's record is shown as, to people and to models: successes / attempts (0 for
    no attempt). One figure everywhere: the API's ``success_rate``, a skill's search hit, the
    explorer."""
    return successes / attempts if attempts else 0.0


def smoothed_success_rate(successes: int, attempts: int) -> float:
    """(successes + 1) / (attempts + 2), for ranking only: one success of one attempt is not
    yet a sure thing (2/3), and no record at all counts as even odds. Never shown as a rate."""
    return (successes + 1) / (attempts + 2)


def success_phrase(successes: int, attempts: int) -> str:
    """The record in words, e.g. ``100%, 1 of 1``: the percentage rounded half up, as the
    explorer rounds it (``percent``), and the counts it comes from."""
    percent = (200 * successes + attempts) // (2 * attempts) if attempts else 0
    return f"{percent}%, {successes} of {attempts}"


@dataclass(frozen=True)
class SkillScore:
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str]
    attempts: int
    successes: int
    #: successes / attempts (``success_rate``).
    success_rate: float
    similarity: float
    #: similarity x the smoothed rate (``smoothed_success_rate``): what the skills are ranked by.
    score: float
    last_used_at: datetime | None
    last_feedback: str | None


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
    """The user's skills for a task, by similarity times the smoothed success rate (successes+1)/(attempts+2)
    (``smoothed_success_rate``; each skill shows its plain ``success_rate``)."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_BEST, {"embedding": embedding, "user": user_id, "model": model, "limit": limit})
        rows = await cur.fetchall()
    return [_score(r) for r in rows]


def _score(r: dict[str, Any]) -> SkillScore:
    similarity, attempts, successes = float(r["similarity"]), int(r["attempts"]), int(r["successes"])
    return SkillScore(
        skill_id=r["skill_id"], name=r["name"], description=r["description"], steps=list(r["steps"]),
        attempts=attempts, successes=successes, success_rate=success_rate(successes, attempts),
        similarity=similarity, score=similarity * smoothed_success_rate(successes, attempts),
        last_used_at=r["last_used_at"], last_feedback=r["last_feedback"],
    )  # fmt: skip


@dataclass(frozen=True)
class SkillRecord:
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str]
    attempts: int
    successes: int
    last_used_at: datetime
    last_feedback: str | None
    created_at: datetime


_LIST = """
SELECT skill_id, name, description, steps, attempts, successes, last_used_at, last_feedback, created_at
FROM {skills} WHERE tenant_id = %(tenant)s AND user_id = %(user)s {after}
ORDER BY name, skill_id LIMIT %(limit)s
"""
#: After the skill a cursor names (by id: a skill's name may be long), in (name, id) order.
_AFTER = sql.SQL(
    "AND (name, skill_id) > (SELECT k.name, k.skill_id FROM skills k"
    " WHERE k.tenant_id = %(tenant)s AND k.user_id = %(user)s AND k.skill_id = %(after)s)"
)
_LIST_FIRST = sql.SQL(_LIST).format(skills=sql.SQL(VISIBLE_SKILLS), after=sql.SQL(""))
_LIST_NEXT = sql.SQL(_LIST).format(skills=sql.SQL(VISIBLE_SKILLS), after=_AFTER)


async def list_skills(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, *, user_id: str, after: uuid.UUID | None, limit: int
) -> list[SkillRecord]:
    """Up to ``limit`` of the user's skills in name order, after the skill ``after`` (the
    previous page's last), each with its record as the current reader may see it."""
    params = {"tenant": tenant_id, "user": user_id, "after": after, "limit": limit}
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_LIST_FIRST if after is None else _LIST_NEXT, params)
        rows = await cur.fetchall()
    return [_record(r) for r in rows]


def _record(r: dict[str, Any]) -> SkillRecord:
    return SkillRecord(
        skill_id=r["skill_id"], name=r["name"], description=r["description"], steps=[str(s) for s in r["steps"]],
        attempts=int(r["attempts"]), successes=int(r["successes"]), last_used_at=r["last_used_at"],
        last_feedback=r["last_feedback"], created_at=r["created_at"],
    )  # fmt: skip
