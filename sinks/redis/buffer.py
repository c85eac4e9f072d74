"""Session buffers in Redis: a user's last turns in a session, bounded by turns and tokens.

A buffer belongs to (tenant, user, session): another user posting with the same session id
has a buffer of their own and never shows in this one. Keys of one buffer share a hash slot
(``sinks/redis/keys.py``): the buffer, its trim mark,
its rolling summary and its compaction-request flag live on one Redis Cluster node, so one
Lua script can touch them atomically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, NamedTuple, cast

import orjson
import redis.asyncio as aioredis

from memstream.settings import Settings
from schemas.turns import Turn
from sinks.redis.keys import (
    BUFFER_KINDS,
    buffer_key,
    request_key,
    summary_key,
    trim_mark_key,
    user_buffers_pattern,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SessionRef(NamedTuple):
    """Whose buffer: a user's turns in one session of a tenant."""

    tenant_id: str
    user_id: str
    session_id: str

    @classmethod
    def of(cls, turn: Turn) -> SessionRef:
        return cls(turn.tenant_id, turn.user_id, turn.session_id)

    def keys(self) -> list[str]:
        """The buffer, its trim mark, its rolling summary and its compaction flag."""
        return [buffer_key(*self), trim_mark_key(*self), summary_key(*self), request_key(*self)]


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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True)
class Appended:
    """What one append left in a session's buffer."""

    held: int
    #: Turns beyond the window, waiting to be folded into the rolling summary.
    due: int
    #: True when this append raised the session's compaction request (one in flight at a time).
    request: bool


@dataclass(frozen=True)
class RollingSummary:
    text: str
    summarizer: str
    #: Event time (µs) of the newest turn folded in.
    through: int
    turns: int
    calls: int
    input_tokens: int
    output_tokens: int
    updated_at: str
    #: Agents whose private (not shared) turns were folded in: only they may read it.
    agents: tuple[str, ...] = ()


@dataclass(frozen=True)
class TurnForgotten:
    """What forgetting one turn removed from its session's buffer."""

    #: Entries of the turn removed (0: it was not buffered, or no longer).
    removed: int
    #: The rolling summary was dropped: it had folded in turns up to the turn's time.
    summary_dropped: bool


@dataclass(frozen=True)
class BufferView:
    """A session as the buffer holds it: summary, turns waiting to be folded, the window."""

    summary: RollingSummary | None
    pending: list[dict[str, Any]]
    window: list[dict[str, Any]]


def _as_entries(rows: Any) -> list[BufferEntry]:
    """A buffer's ``ZRANGE ... WITHSCORES`` as entries, oldest first."""
    return [
        BufferEntry(score=int(score), member=member, tokens=int(orjson.loads(member)["tokens"]))
        for member, score in cast(list[tuple[bytes, float]], rows)
    ]


def _as_summary(raw: Mapping[Any, Any]) -> RollingSummary | None:
    """A rolling summary's hash (``HGETALL``); None when the session has none."""
    if not raw:
        return None
    fields = {_text(k): _text(v) for k, v in raw.items()}
    return RollingSummary(
        text=fields.get("text", ""),
        summarizer=fields.get("summarizer", ""),
        through=int(fields.get("through", 0)),
        turns=int(fields.get("turns", 0)),
        calls=int(fields.get("calls", 0)),
        input_tokens=int(fields.get("input_tokens", 0)),
        output_tokens=int(fields.get("output_tokens", 0)),
        updated_at=fields.get("updated_at", ""),
        agents=tuple(orjson.loads(fields.get("agents", "[]"))),
    )


class SessionBuffers:
    """Appends batches of turns (many sessions per round trip), folds turns into the rolling
    summary before trimming them, and reads a session back."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        max_turns: int,
        max_tokens: int,
        hard_cap: int = 200,
        ttl_s: int = 7 * 86_400,
        request_ttl_s: float = 30.0,
    ) -> None:
        self.client = client
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.hard_cap = max(hard_cap, max_turns)
        self.ttl_s = ttl_s
        self.request_ttl_ms = int(request_ttl_s * 1000)
        scripts = resources.files("sinks.redis")
        self._append = client.register_script(scripts.joinpath("append_buffer.lua").read_text())
        self._fold = client.register_script(scripts.joinpath("fold_buffer.lua").read_text())
        self._forget_turn = client.register_script(scripts.joinpath("forget_turn.lua").read_text())

    async def append(self, batch: Mapping[SessionRef, Sequence[BufferEntry]]) -> dict[SessionRef, Appended]:
        """Append each buffer's entries; one pipelined round trip for the whole batch."""
        if not batch:
            return {}
        sessions = list(batch)
        async with self.client.pipeline(transaction=False) as pipe:
            for ref in sessions:
                args: list[Any] = [
                    self.max_turns,
                    self.max_tokens,
                    self.ttl_s,
                    self.hard_cap,
                    self.request_ttl_ms,
                ]
                for entry in batch[ref]:
                    args.extend((entry.score, entry.member))
                keys = [buffer_key(*ref), trim_mark_key(*ref), request_key(*ref)]
                await self._append(keys=keys, args=args, client=pipe)
            results = await pipe.execute()
        return {
            s: Appended(held=int(r[0]), due=int(r[1]), request=bool(int(r[2])))
            for s, r in zip(sessions, results, strict=True)
        }

    async def _entries(self, ref: SessionRef) -> list[BufferEntry]:
        return _as_entries(await self.client.zrange(buffer_key(*ref), 0, -1, withscores=True))

    def _split(self, entries: list[BufferEntry]) -> tuple[list[BufferEntry], list[BufferEntry]]:
        kept = window(entries, max_turns=self.max_turns, max_tokens=self.max_tokens)
        inside = {e.member for e in kept}
        return [e for e in entries if e.member not in inside], kept

    async def view(self, ref: SessionRef) -> BufferView:
        """The rolling summary, the turns waiting to be folded into it, and the window: read
        together (one round trip, ``MULTI``: a fold between the two reads would have shown its
        turns twice or not at all; the keys share a slot)."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zrange(buffer_key(*ref), 0, -1, withscores=True)
            pipe.hgetall(summary_key(*ref))
            rows, raw_summary = await pipe.execute()
        pending, kept = self._split(_as_entries(rows))
        return BufferView(
            summary=_as_summary(raw_summary),
            pending=[orjson.loads(e.member) for e in pending],
            window=[orjson.loads(e.member) for e in kept],
        )

    async def read(self, ref: SessionRef) -> list[dict[str, Any]]:
        """Every buffered turn (window and pending), oldest first."""
        return [orjson.loads(e.member) for e in await self._entries(ref)]

    async def due(self, ref: SessionRef, *, limit: int) -> list[BufferEntry]:
        """The oldest turns beyond the window (at most ``limit``), to be folded."""
        pending, _ = self._split(await self._entries(ref))
        return pending[:limit]

    async def summary(self, ref: SessionRef) -> RollingSummary | None:
        return _as_summary(await self.client.hgetall(summary_key(*ref)))

    async def fold(
        self,
        ref: SessionRef,
        folded: Sequence[BufferEntry],
        *,
        text: str,
        summarizer: str,
        input_tokens: int,
        output_tokens: int,
        agents: Sequence[str],
    ) -> int:
        """Store the new summary and trim exactly the folded turns; -1 if they changed meanwhile."""
        keys = ref.keys()
        args: list[Any] = [text, summarizer, input_tokens, output_tokens, self.ttl_s,
                           datetime.now(UTC).isoformat(), orjson.dumps(sorted(set(agents))),
                           *(e.member for e in folded)]  # fmt: skip
        return int(await self._fold(keys=keys, args=args))

    async def release_request(self, ref: SessionRef) -> None:
        """Let the next append request a compaction again (after a request found nothing due)."""
        await self.client.delete(request_key(*ref))

    async def forget_turn(self, ref: SessionRef, event_id: str, event_time: datetime) -> TurnForgotten:
        """Remove one turn from its buffer, and drop the rolling summary if it may hold the turn
        (``forget_turn.lua``): a memory forgotten on its own."""
        removed, dropped = await self._forget_turn(
            keys=[buffer_key(*ref), summary_key(*ref)], args=[event_id, event_time_micros(event_time)]
        )
        return TurnForgotten(removed=int(removed), summary_dropped=bool(int(dropped)))

    async def forget(self, tenant_id: str, user_id: str) -> int:
        """Delete every buffer, summary and mark of the user, in whatever session — found by
        scanning the keys, not from a list of sessions: a turn can be buffered before any
        other store knows its session (an erasure racing a batch). Returns the sessions whose
        buffer (or summary) existed."""
        sessions: set[str] = set()
        async for raw in self.client.scan_iter(match=user_buffers_pattern(tenant_id, user_id), count=1000):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            if key.split(":", 2)[1] in BUFFER_KINDS and await self.client.delete(key):
                sessions.add(key[key.index("{") :])
        return len(sessions)


def session_buffers(client: aioredis.Redis, settings: Settings) -> SessionBuffers:
    """The buffers as configured (worker and gateway must agree on the window)."""
    return SessionBuffers(
        client,
        max_turns=settings.buffer_max_turns,
        max_tokens=settings.buffer_max_tokens,
        hard_cap=settings.buffer_hard_cap_turns,
        request_ttl_s=settings.compaction_request_ttl_s,
    )
