"""Long-term memory: facts and their history, the graph, skills, tool outcomes in (gateway
schemas ``FactsOut``, ``FactOut``, ``NeighborsOut``, ``NeighborOut``, ``SkillsOut``,
``SkillOut``, ``SkillPageOut``, ``SkillRecordOut``, ``ToolEventIn``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from memstream_client.models.base import Model
from memstream_client.types import Outcome


class Fact(Model):
    fact_id: uuid.UUID
    user_id: str
    agent_id: str
    session_id: str
    project_id: str | None
    #: ``global``, ``project`` or ``session``.
    scope: str
    entity: str
    category: str
    summary: str
    importance: float
    version: int
    valid_from: datetime
    #: None while current.
    valid_to: datetime | None
    superseded_by: uuid.UUID | None
    change_reason: str
    source_event_id: uuid.UUID
    #: Every event that stated it (merged duplicates).
    sources: list[uuid.UUID]
    extractor: str


class Facts(Model):
    user_id: str
    at: datetime | None
    facts: list[Fact]


class Neighbor(Model):
    entity: str
    depth: int
    #: The shortest path found, as ``"subject -predicate-> object"`` hops.
    path: list[str]


class Neighbors(Model):
    entity: str
    depth: int
    #: ``out``, ``in`` or ``both``.
    direction: str
    neighbors: list[Neighbor]


class Skill(Model):
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str]
    attempts: int
    successes: int
    #: successes / attempts, as everywhere a rate is shown.
    success_rate: float
    similarity: float
    #: What the skills are ranked by: similarity x (successes + 1) / (attempts + 2), smoothed for
    #: ranking only.
    score: float
    last_used_at: datetime | None
    last_feedback: str | None


class Skills(Model):
    task: str
    skills: list[Skill]


class SkillRecord(Model):
    """A skill and its record, from the outcomes the key may see."""

    skill_id: uuid.UUID
    name: str
    description: str
    #: The steps of the newest outcome that had any.
    steps: list[str]
    attempts: int
    successes: int
    #: successes / attempts, as everywhere a rate is shown.
    success_rate: float
    #: The time of the newest outcome.
    last_used_at: datetime
    last_feedback: str | None
    #: When the skill was first recorded.
    created_at: datetime


class SkillPage(Model):
    user_id: str
    #: In name order.
    skills: list[SkillRecord]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None


class ToolEvent(Model):
    """The outcome of a tool call or of a whole skill (e.g. a deploy), for procedural memory."""

    #: The idempotency key; filled in by the SDK when absent, repeated by every retry.
    event_id: uuid.UUID | None = None
    #: Optional when the key is bound to an agent.
    agent_id: str | None = None
    user_id: str
    session_id: str
    project_id: str | None = None
    #: What was attempted, e.g. ``deploy``.
    skill: str
    tool_name: str | None = None
    status: Outcome
    #: What went wrong, or advice.
    feedback: str | None = None
    #: What was done, in order.
    steps: list[str] = Field(default_factory=list)
    shared: bool = False
    event_time: datetime | None = None
