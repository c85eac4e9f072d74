"""Forgetting one memory (gateway schema ``ForgottenOut``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from memstream_client.models.base import Model


class ForgottenMemory(Model):
    kind: Literal["episode", "fact"]
    #: The memory forgotten: an episode's event id or a fact version's id.
    id: uuid.UUID
    #: episodic, procedural or summary (an episode), or fact
    memory_type: str
    forgotten_at: datetime
    #: It had been forgotten before (e.g. a retry after a lost answer): nothing more was removed.
    repeated: bool
    #: Entries of the turn removed from its session buffer.
    buffer_turns: int
    #: The session's rolling summary was dropped, as it may have held the turn.
    summary_dropped: bool
    #: A fact: the earlier version that takes its place (current again if the forgotten one was).
    restored_fact_id: uuid.UUID | None
