"""Turns in (``POST /v1/turns``, gateway schemas ``TurnIn``, ``TurnBatchIn``, ``TurnsAccepted``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from memstream_client.models.base import Model
from memstream_client.types import Role, ToolStatus


class Turn(Model):
    """One conversation turn (or tool call and its outcome) an agent reports."""

    #: The idempotency key: the same id sent again is stored once. The SDK fills one in when
    #: absent, before the first attempt, and every retry repeats it.
    event_id: uuid.UUID | None = None
    #: Optional: the key's tenant (another is refused with 403).
    tenant_id: str | None = None
    #: Optional when the key is bound to an agent (the key names it).
    agent_id: str | None = None
    user_id: str
    project_id: str | None = None
    session_id: str
    role: Role
    content: str
    #: When it happened, with a timezone; the gateway's clock when absent.
    event_time: datetime | None = None
    tool_name: str | None = None
    tool_status: ToolStatus | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)
    #: Visible to every agent of the tenant (default: private to ``agent_id``).
    shared: bool = False


class TurnBatch(Model):
    turns: list[Turn]


class PublishResult(Model):
    """What the gateway accepted: the event ids in the order of the turns sent."""

    accepted: int
    event_ids: list[uuid.UUID]
