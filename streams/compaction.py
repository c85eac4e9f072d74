"""Compaction requests: a session's buffer passed its window, so its summariser should run."""

from __future__ import annotations

from datetime import UTC, datetime

import faust

from schemas.codec import AvroCodec
from schemas.turns import turn_key
from sinks.redis.buffer import SessionRef


class CompactionRequests:
    def __init__(self, topic: faust.TopicT, codec: AvroCodec) -> None:
        self.topic = topic
        self.codec = codec

    async def request(self, ref: SessionRef, *, due_turns: int) -> None:
        """Publish a request and wait for the broker (keyed by session: one summariser at a time)."""
        value = self.codec.encode(
            {"tenant_id": ref.tenant_id, "user_id": ref.user_id, "session_id": ref.session_id,
             "due_turns": due_turns, "requested_at": datetime.now(UTC)}
        )  # fmt: skip
        ack = await self.topic.send(key=turn_key(ref.tenant_id, ref.session_id), value=value)
        await ack
