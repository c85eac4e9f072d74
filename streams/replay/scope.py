"""Which events a replay re-derives, and where it writes them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import orjson

from memstream.errors import MemstreamError
from sinks.postgres.erasure import user_ref
from sinks.postgres.queries.replay_log import LogFilter

#: ``shadow``: fresh tables, switched in when done; ``verify``: fresh tables compared with the
#: live ones, then dropped; ``in-place``: the live tables themselves (idempotent writes).
Target = Literal["shadow", "verify", "in-place"]


class ReplayError(MemstreamError):
    """A replay cannot start or finish (the message says why and what to do)."""


@dataclass(frozen=True)
class Scope:
    tenant_id: str | None = None
    user_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def check(self, target: Target) -> None:
        if self.user_id is not None and self.tenant_id is None:
            raise ReplayError("--user needs --tenant (user ids are per tenant)")
        if self.since and self.until and self.since >= self.until:
            raise ReplayError("--since must be before --until")
        if (self.since or self.until) and target != "in-place":
            raise ReplayError(
                "a time range can only be replayed --in-place: rebuilding part of a history into fresh"
                " tables would cut the version chains of the facts stated before and after it"
            )

    @property
    def log_filter(self) -> LogFilter:
        return LogFilter(self.user_id, self.since, self.until)

    def describe(self) -> dict[str, str | None]:
        """The scope as recorded with a run: a user by reference, never by id."""
        return {
            "tenant_id": self.tenant_id,
            "user_ref": user_ref(self.tenant_id, self.user_id) if self.tenant_id and self.user_id else None,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
        }

    @property
    def key(self) -> str:
        return hashlib.sha256(orjson.dumps(self.describe(), option=orjson.OPT_SORT_KEYS)).hexdigest()
