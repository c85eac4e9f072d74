"""Procedural memory: tool outcomes update skills; a failure with feedback becomes a lesson.

A tool turn names its skill in ``metadata["skill"]`` (``POST /v1/tool-events`` sets it; the
tool's name is used otherwise), its outcome in ``tool_status``, and may carry
``metadata["feedback"]`` and ``metadata["steps"]`` (a JSON list). Each outcome is counted
once (keyed by event id); a failure with feedback is also stored as a high-importance
``procedural`` memory, which search finds like any episode.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence

import orjson

from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.erasure import forgotten, lock_users
from sinks.postgres.skills import SkillRun, record_run
from sinks.postgres.tenancy import act_as
from streams.decoding import Decoded
from streams.resources import MemoryResources
from streams.stages.base import SinkStage

LESSON_NAMESPACE = uuid.UUID("3b7f1d4e-2c6a-4f5e-8a9b-6d656d6c6573")
LESSON_IMPORTANCE = 0.9


def skill_run(turn: Turn) -> SkillRun | None:
    if turn.role != "tool" or turn.tool_status not in ("success", "failure"):
        return None
    skill = turn.metadata.get("skill") or turn.tool_name
    if not skill:
        return None
    try:
        steps = [str(s) for s in orjson.loads(turn.metadata.get("steps", "[]"))]
    except orjson.JSONDecodeError:
        steps = []
    feedback = turn.metadata.get("feedback") or (turn.content if turn.tool_status == "failure" else None)
    return SkillRun(
        tenant_id=turn.tenant_id, event_id=turn.event_id, user_id=turn.user_id, agent_id=turn.agent_id,
        shared=turn.shared, skill=skill,
        success=turn.tool_status == "success", feedback=feedback, steps=steps, at=turn.event_time,
    )  # fmt: skip


def lesson(turn: Turn, run: SkillRun) -> Turn:
    """The failure as a memory of its own: what went wrong, and what to do instead."""
    return Turn(
        event_id=uuid.uuid5(LESSON_NAMESPACE, str(turn.event_id)), tenant_id=turn.tenant_id,
        agent_id=turn.agent_id, user_id=turn.user_id, project_id=turn.project_id, session_id=turn.session_id,
        role="tool", content=f"Lesson from a failed {run.skill} ({turn.event_time:%Y-%m-%d}): {run.feedback}",
        event_time=turn.event_time, tool_name=turn.tool_name, tool_status="failure",
        tags=("lesson", "failure"), metadata={"skill": run.skill, "source_event_id": str(turn.event_id)},
        shared=turn.shared, received_at=turn.received_at,
    )  # fmt: skip


class ProcedureStage(SinkStage):
    name = "procedures"

    def __init__(self, resources: MemoryResources) -> None:
        self.resources = resources

    async def write(self, batch: Sequence[Decoded]) -> None:
        runs = [(d.turn, run) for d in batch if (run := skill_run(d.turn)) is not None]
        if not runs:
            return
        embedder = self.resources.embedder
        names = await embedder.embed_owned([run.skill for _, run in runs], [turn.tenant_id for turn, _ in runs])
        by_tenant: dict[str, list[int]] = defaultdict(list)
        for i, (turn, _) in enumerate(runs):
            by_tenant[turn.tenant_id].append(i)
        lessons: list[Turn] = []
        async with self.resources.pool.connection() as conn, conn.transaction():
            for tenant, positions in sorted(by_tenant.items()):
                await act_as(conn, tenant, actor="worker")
                users = {runs[i][0].user_id for i in positions}
                await lock_users(conn, tenant, users)
                erased = await forgotten(
                    conn, tenant, ((runs[i][0].event_id, runs[i][0].user_id, runs[i][0].received_at) for i in positions)
                )
                for i in positions:
                    turn, run = runs[i]
                    if turn.event_id in erased:
                        continue
                    await record_run(conn, run, embedding=names[i], model=embedder.model_name)
                    # Also when the run was counted before: a crash between that commit and the
                    # lesson's own write must not lose the lesson (its id is derived, so it is once).
                    if not run.success and run.feedback:
                        lessons.append(lesson(turn, run))
        if lessons:
            texts, owners = [t.content for t in lessons], [t.tenant_id for t in lessons]
            vectors = await embedder.embed_owned(texts, owners)
            counts = self.resources.tokens.count_owned(texts, owners)
            episodes = [
                Episode(t, v, n, importance=LESSON_IMPORTANCE, memory_type="procedural")
                for t, v, n in zip(lessons, vectors, counts, strict=True)
            ]
            async with self.resources.pool.connection() as conn:
                await upsert_episodes(conn, episodes, model=embedder.model_name)
