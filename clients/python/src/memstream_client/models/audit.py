"""The tenant's audit log (gateway schemas ``AuditPageOut``, ``AuditRecordOut``)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from memstream_client.models.base import Model


class AuditRecord(Model):
    audit_id: uuid.UUID
    #: The record's position in the audit log.
    seq: int
    at: datetime
    #: Who: an API key's id, or ``worker``, ``maintenance``, ``operator``, ``replay``.
    actor: str
    #: What, e.g. ``memory.delete``, ``permission.decision``, ``user.erase``.
    action: str
    #: What it concerns: an id, a session, or a user by reference.
    subject: str | None
    #: Ids, counts and hashes, never memory content.
    detail: dict[str, Any]


class AuditPage(Model):
    #: Newest first.
    records: list[AuditRecord]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
