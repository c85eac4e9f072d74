"""Session buffers in Redis: the last turns of each session, bounded by turns and tokens.

Keys of one session share a hash slot (``{tenant:session}``), so the buffer and
what later issues put beside it (the rolling summary) live on one Redis Cluster
node and one Lua script can touch them atomically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, cast

import orjson
import redis.asyncio as aioredis

from schemas.turns import Turn

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def session_tag(tenant_id: str, session_id: str) -> str:
    return "{" + f"{tenant_id}:{session_id}" + "}"


def buffer_key(tenant_id: str, session_id: str) -> str:
    return f"ms:buf:{session_tag(tenant_id, session_id)}"


def trim_mark_key(tenant_id: str, session_id: str) -> str:
    return f"ms:bufmark:{session_tag(tenant_id, session_id)}"


def event_time_micros(when: datetime) -> int:
    delta = when - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True, slots=True)
class BufferEntry:
    """One turn as the buffer holds it."""

    score: int
    member: bytes
    tokens: int


def to_entry(turn: Turn, tokens: int) -> BufferEntry:
    body = {
        "event_id": str(turn.event_id),
        "agent_id": turn.agent_id,
        "user_id": turn.user_id,
        "project_id": turn.project_id,
        "role": turn.role,
        "content": turn.content,
        "event_time": turn.event_time.isoformat(),
        "tool_name": turn.tool_name,
        "tool_status": turn.tool_status,
        "shared": turn.shared,
        "tokens": tokens,
    }
    return BufferEntry(
        score=event_time_micros(turn.event_time),
        member=orjson.dumps(body, option=orjson.OPT_SORT_KEYS),
        tokens=tokens,
    )


def window(entries: Iterable[BufferEntry], *, max_turns: int, max_tokens: int) -> list[BufferEntry]:
    """The reference semantics of the Lua script, oldest first, over every turn ever
    appended to a session (in any order, with repeats).

    Distinct members ordered by (score, member); keep the newest ``max_turns``; then,
    walking back from the newest, keep turns while the token total stays within
    ``max_tokens`` (the newest turn always stays, however long it is).
    """
    unique = {e.member: e for e in entries}
    ordered = sorted(unique.values(), key=lambda e: (e.score, e.member))[-max_turns:]
    kept: list[BufferEntry] = []
    total = 0
    for entry in reversed(ordered):
        if kept and total + entry.tokens > max_tokens:
            break
        total += entry.tokens
        kept.append(entry)
    kept.reverse()
    return kept


class SessionBuffers:
    """Appends batches of turns, many sessions per round trip, and reads a session back."""

    def __init__(
        self, client: aioredis.Redis, *, max_turns: int, max_tokens: int, ttl_s: int = 7 * 86_400
    ) -> None:
        self.client = client
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.ttl_s = ttl_s
        source = resources.files("sinks.redis").joinpath("append_buffer.lua").read_text()
        self._append = client.register_script(source)

    async def append(
        self, batch: Mapping[tuple[str, str], Sequence[BufferEntry]]
    ) -> dict[tuple[str, str], int]:
        """Append each session's entries; one pipelined round trip for the whole batch."""
        if not batch:
            return {}
        sessions = list(batch)
        async with self.client.pipeline(transaction=False) as pipe:
            for tenant_id, session_id in sessions:
                args: list[Any] = [self.max_turns, self.max_tokens, self.ttl_s]
                for entry in batch[(tenant_id, session_id)]:
                    args.extend((entry.score, entry.member))
                keys = [buffer_key(tenant_id, session_id), trim_mark_key(tenant_id, session_id)]
                await self._append(keys=keys, args=args, client=pipe)
            sizes = await pipe.execute()
        return {s: int(n) for s, n in zip(sessions, sizes, strict=True)}

    async def forget(self, tenant_id: str, session_ids: Sequence[str]) -> int:
        """Delete the buffers (and trim marks) of these sessions; returns how many existed."""
        deleted = 0
        for session_id in session_ids:  # one slot per session: no multi-key DEL across slots
            deleted += int(
                await self.client.delete(
                    buffer_key(tenant_id, session_id), trim_mark_key(tenant_id, session_id)
                )
                > 0
            )
        return deleted

    async def read(self, tenant_id: str, session_id: str) -> list[dict[str, Any]]:
        """The session's buffered turns, oldest first."""
        members = await self.client.zrange(buffer_key(tenant_id, session_id), 0, -1)
        return [orjson.loads(cast(bytes, m)) for m in members]
