"""The tenant's users, erasure and renewed consent (gateway schemas ``UserPageOut``,
``UserSummaryOut``, ``ErasureOut``, ``ConsentOut``)."""

from __future__ import annotations

import uuid
from datetime import datetime

from memstream_client.models.base import Model


class Erasure(Model):
    erasure_id: uuid.UUID
    erased_at: datetime
    episodes: int
    events: int
    sessions: int
    buffers: int


class Consent(Model):
    consent_id: uuid.UUID
    #: Turns of the user dated after this are stored again.
    consented_at: datetime
    #: Whether the user had been erased (otherwise nothing changes).
    after_erasure: bool


class UserSummary(Model):
    user_id: str
    #: The user's live (not archived) episodes the key may see.
    episodes: int
    #: The event time of the user's newest episode the key may see (None: only facts or skills).
    last_seen: datetime | None


class UserPage(Model):
    #: In user id order.
    users: list[UserSummary]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
