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
