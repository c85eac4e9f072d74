"""Event ids belong to one turn each: the id is the idempotency key, so sending the same turn
again is a retry, and sending *another* turn with a used id is a conflict.

Without this, a second turn reusing an id was acknowledged (202) and then half-stored: the
event log and episodes kept the first (keyed by event id), while the session buffer took the
second — outside what erasure of its user found. The gateway claims each id before it
publishes: the first claim records a hash of the turn's identity (agent, user, session, role,
content, tool); a claim with the same hash passes, another is refused with 409. Claims live
``ttl_s`` (a week by default: far longer than any client's retries).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import redis.asyncio as aioredis

from sinks.redis.keys import event_claim_key

IDENTITY_FIELDS = ("agent_id", "user_id", "session_id", "role", "content", "tool_name", "tool_status")


def identity(record: Mapping[str, Any]) -> str:
    """What makes a turn the same turn (not its time: a retry without one is stamped anew)."""
    h = hashlib.sha256()
    for name in IDENTITY_FIELDS:
        value = record.get(name)
        h.update(b"\x00" if value is None else str(value).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


class EventClaims:
    def __init__(self, client: aioredis.Redis, *, ttl_s: int) -> None:
        self.client = client
        self.ttl_s = ttl_s
        self._claim = client.register_script(resources.files("sinks.redis").joinpath("claim_event.lua").read_text())

    async def conflicts(self, tenant_id: str, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Claim every record's event id (one round trip); the indices of records whose id
        another turn holds."""
        if not records:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for record in records:
                key = event_claim_key(tenant_id, str(record["event_id"]))
                await self._claim(keys=[key], args=[identity(record), self.ttl_s], client=pipe)
            results = await pipe.execute()
        return [i for i, ok in enumerate(results) if not int(ok)]
