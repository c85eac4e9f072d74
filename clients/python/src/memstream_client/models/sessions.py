"""A session's buffer (``GET /v1/sessions/{session_id}/buffer``, gateway schemas ``BufferOut``,
``BufferedTurn``, ``RollingSummaryOut``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from memstream_client.models.base import Model


class BufferedTurn(Model):
    event_id: uuid.UUID
    agent_id: str
    user_id: str
    project_id: str | None
    role: str
    content: str
    event_time: datetime
    tool_name: str | None = None
    tool_status: str | None = None
    shared: bool = False
    tokens: int


class RollingSummary(Model):
    text: str
    summarizer: str
    #: Event time of the newest turn folded into the summary.
    through: datetime
    #: Turns folded in so far.
    turns: int
    #: Summariser calls so far.
    calls: int
    input_tokens: int
    output_tokens: int


class SessionBuffer(Model):
    tenant_id: str
    user_id: str
    session_id: str
    #: The rolling summary of older turns.
    summary: RollingSummary | None
    #: Turns beyond the window, not yet folded in.
    pending: list[BufferedTurn]
    #: The window: the newest turns, oldest first.
    turns: list[BufferedTurn]
    #: Tokens of the window's turns.
    total_tokens: int
