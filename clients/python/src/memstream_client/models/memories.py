"""A user's memories as a timeline, and forgetting one (gateway schemas ``MemoryPageOut``,
``MemoryOut``, ``MemorySourceOut``, ``ForgottenOut``)."""

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


class MemorySource(Model):
    """Where a memory came from."""

    #: The event: a turn's own; a lesson's failed tool outcome; a daily summary's compaction record.
    event_id: uuid.UUID | None
    #: The topic it was consumed from (``memstream.maintenance``: a compaction).
    topic: str | None
    #: The Kafka partition and offset, when it came through Kafka.
    partition: int | None
    offset: int | None
    #: The summariser that wrote a daily summary.
    produced_by: str | None


class Memory(Model):
    """One episode: a turn (``episodic``), a lesson (``procedural``) or a daily summary (``summary``)."""

    #: The event id (what ``memories.delete`` takes).
    id: uuid.UUID
    memory_type: str
    #: An original that compaction archived behind a daily summary (not served by search).
    archived: bool
    archived_at: datetime | None
    #: The daily summary that replaced it.
    archived_into: uuid.UUID | None
    role: str
    content: str
    session_id: str
    project_id: str | None
    #: The agent whose memory it is.
    agent_id: str
    #: Visible to the tenant's other agents.
    shared: bool
    importance: float
    tags: list[str]
    #: The event time.
    created_at: datetime
    #: When it was stored.
    ingested_at: datetime
    source: MemorySource


class MemoryPage(Model):
    user_id: str
    #: Newest first.
    memories: list[Memory]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
