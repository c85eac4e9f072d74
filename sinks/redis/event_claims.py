"""Event ids belong to one turn each: the id is the idempotency key, so sending the same turn
again is a retry, and sending *another* turn with a used id is a conflict.

Without this, a second turn reusing an id was acknowledged (202) and then half-stored: the
event log and episodes kept the first (keyed by event id), while the session buffer took the
second — outside what erasure of its user found. The gateway claims each id before it
publishes: the first claim records a hash of the turn's identity (agent, user, session, role,
content, tool); a claim with the same hash passes, another is refused with 409. Claims live
``ttl_s`` (a week by default: far longer than any client's retries).

A claim also keeps the turn's time. A client that sends no ``event_time`` gets the gateway's
clock, which differs on every attempt: a retry takes the first attempt's time back, so that
the event that reaches the pipeline is the same whichever attempt's answer got lost (the
session buffer, which keeps turns as sent, holds it once).

And it keeps when the gateway first received the turn: a retry is published with that time
as its record's (``Turn.received_at``), so it is ordered against an erasure and a consent as
its first attempt was. A turn received before an erasure and retried after the consent stays
forgotten (a red team got it stored again, issue 45).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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

    async def claim(self, tenant_id: str, records: Sequence[dict[str, Any]], *, received_at: datetime) -> Claimed:
        """Claim every record's event id (one round trip), received now (``received_at``). A
        retried record's ``event_time`` becomes its first claim's, and its receipt the first
        claim's too."""
        if not records:
            return Claimed([], [])
        now = _micros(received_at)
        async with self.client.pipeline(transaction=False) as pipe:
            for record in records:
                key = event_claim_key(tenant_id, str(record["event_id"]))
                args: list[str | int] = [identity(record), self.ttl_s, _micros(record["event_time"]), now]
                await self._claim(keys=[key], args=args, client=pipe)
            results = await pipe.execute()
        refused: list[int] = []
        received: list[datetime] = []
        for i, (record, (ours, kept, first)) in enumerate(zip(records, results, strict=True)):
            if not int(ours):
                refused.append(i)
                received.append(received_at)
                continue
            if int(kept) != _micros(record["event_time"]):
                record["event_time"] = EPOCH + timedelta(microseconds=int(kept))
            received.append(EPOCH + timedelta(microseconds=int(first)))
        return Claimed(refused, received)


@dataclass(frozen=True)
class Claimed:
    #: The indices of records whose id another turn holds (409).
    refused: list[int]
    #: For each record, when the gateway first received it: its record's Kafka time.
    received_at: list[datetime]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(when: datetime) -> int:
    return (when - EPOCH) // timedelta(microseconds=1)
