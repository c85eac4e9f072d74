"""Compaction requests: a session's buffer passed its window, so its summariser should run."""

from __future__ import annotations

from datetime import UTC, datetime

import faust

from schemas.codec import AvroCodec
from schemas.turns import turn_key


class CompactionRequests:
    def __init__(self, topic: faust.TopicT, codec: AvroCodec) -> None:
        self.topic = topic
        self.codec = codec

    async def request(self, tenant_id: str, session_id: str, *, due_turns: int) -> None:
        """Publish a request and wait for the broker (keyed by session: one summariser at a time)."""
        value = self.codec.encode(
            {"tenant_id": tenant_id, "session_id": session_id, "due_turns": due_turns,
             "requested_at": datetime.now(UTC)}
        )  # fmt: skip
        ack = await self.topic.send(key=turn_key(tenant_id, session_id), value=value)
        await ack
