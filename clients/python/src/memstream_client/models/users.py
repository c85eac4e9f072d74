"""Erasure and renewed consent (gateway schemas ``ErasureOut``, ``ConsentOut``)."""

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
