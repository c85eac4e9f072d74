"""The Redis Lua script against its reference semantics (``window``), on the real server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import orjson
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from sinks.redis.buffer import BufferEntry, SessionBuffers, SessionRef, window
from sinks.redis.keys import buffer_key, trim_mark_key
from tests.fixtures.stack import RunningStack

appends = st.lists(
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30)), min_size=1, max_size=8),
    min_size=1,
    max_size=6,
)


def entry(score: int, tokens: int) -> BufferEntry:
    member = orjson.dumps({"event_id": f"e{score}", "tokens": tokens}, option=orjson.OPT_SORT_KEYS)
    return BufferEntry(score=score, member=member, tokens=tokens)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=appends, max_turns=st.integers(1, 6), max_tokens=st.integers(1, 80))
async def test_lua_script_matches_the_reference_window(
    stack: RunningStack, batches: list[list[tuple[int, int]]], max_turns: int, max_tokens: int
) -> None:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        buffers = SessionBuffers(client, max_turns=max_turns, max_tokens=max_tokens)
        ref = SessionRef(f"t-{uuid.uuid4().hex[:8]}", "u", "s")
        seen: list[BufferEntry] = []
        for batch in batches:
            # A score fixes the tokens: the same event redelivered is the same member.
            entries = [entry(score, (score * 7) % 30 + 1) for score, _ in batch]
            seen.extend(entries)
            appended = (await buffers.append({ref: entries}))[ref]
            expected = window(seen, max_turns=max_turns, max_tokens=max_tokens)
            view = await buffers.view(ref)
            assert [g["event_id"] for g in view.window] == [orjson.loads(e.member)["event_id"] for e in expected]
            distinct = len({e.member for e in seen})
            # Nothing is trimmed before it is summarised: the rest waits, oldest first.
            assert appended.held == distinct and appended.due == distinct - len(expected)
            assert len(view.pending) == appended.due
    finally:
        await client.aclose()


async def test_sessions_share_a_hash_slot_and_expire(stack: RunningStack) -> None:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        buffers = SessionBuffers(client, max_turns=5, max_tokens=100, ttl_s=120)
        nine, ten = SessionRef("acme", "u", "s-9"), SessionRef("acme", "u", "s-10")
        await buffers.append({nine: [entry(1, 1)], ten: [entry(2, 1), entry(3, 1)]})
        assert len(await buffers.read(nine)) == 1
        assert len(await buffers.read(ten)) == 2
        keys = [k async for k in client.scan_iter(match="ms:buf:{acme:u:s-*}")]
        assert sorted(keys) == [b"ms:buf:{acme:u:s-10}", b"ms:buf:{acme:u:s-9}"]
        # the buffer and its trim mark share the buffer's hash slot (the {...} tag)
        assert key_slot(buffer_key(*nine).encode()) == key_slot(trim_mark_key(*nine).encode())
        assert key_slot(buffer_key(*nine).encode()) != key_slot(buffer_key(*ten).encode())
        assert 0 < await client.ttl(b"ms:buf:{acme:u:s-9}") <= 120
        await client.delete(*keys)
    finally:
        await client.aclose()


async def test_summarize_before_trim_folds_exactly_the_summarised_turns(stack: RunningStack) -> None:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        buffers = SessionBuffers(client, max_turns=10, max_tokens=10_000)
        ref = SessionRef(f"t-{uuid.uuid4().hex[:8]}", "u", "s")
        result = (await buffers.append({ref: [entry(s, 5) for s in range(1, 31)]}))[ref]
        assert (result.held, result.due, result.request) == (30, 20, True)
        again = (await buffers.append({ref: [entry(31, 5)]}))[ref]
        assert again.request is False, "one compaction request in flight per session"

        due = await buffers.due(ref, limit=100)
        assert [orjson.loads(e.member)["event_id"] for e in due] == [f"e{s}" for s in range(1, 22)]
        # A turn that arrives while the summariser works is not touched by its fold.
        await buffers.append({ref: [entry(32, 5)]})
        folded = await buffers.fold(
            ref, due, text="decided: rsync", summarizer="test", input_tokens=7, output_tokens=3,
            agents=["agent-1"],
        )  # fmt: skip
        assert folded == 21
        view = await buffers.view(ref)
        assert [t["event_id"] for t in view.window] == [f"e{s}" for s in range(23, 33)]
        assert [t["event_id"] for t in view.pending] == ["e22"]
        assert view.summary is not None
        assert (view.summary.text, view.summary.turns, view.summary.input_tokens) == ("decided: rsync", 21, 7)
        assert view.summary.agents == ("agent-1",)

        # A late turn older than what the summary covers is ignored; a stale fold is refused.
        late = (await buffers.append({ref: [entry(5, 5)]}))[ref]
        assert "e5" not in [t["event_id"] for t in await buffers.read(ref)]
        # The fold released the request flag: with e22 still due, the next append requests again.
        assert late.request is True
        assert await buffers.fold(ref, due, text="x", summarizer="t", input_tokens=0, output_tokens=0, agents=[]) == -1
    finally:
        await client.aclose()


async def test_the_hard_cap_bounds_a_buffer_whose_summariser_is_down(stack: RunningStack) -> None:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        buffers = SessionBuffers(client, max_turns=5, max_tokens=10_000, hard_cap=12)
        ref = SessionRef(f"t-{uuid.uuid4().hex[:8]}", "u", "s")
        result = (await buffers.append({ref: [entry(s, 1) for s in range(1, 21)]}))[ref]
        assert (result.held, result.due) == (12, 7)
        assert [t["event_id"] for t in await buffers.read(ref)] == [f"e{s}" for s in range(9, 21)]
    finally:
        await client.aclose()


async def test_forgetting_a_turn_removes_it_and_a_summary_that_may_hold_it(stack: RunningStack) -> None:
    """``forget_turn.lua``: the turn's entry goes wherever it is; the rolling summary goes too
    when it has folded in turns up to the forgotten one's time, and only then."""
    client = aioredis.from_url(stack.settings.require_redis_url())

    def at(score: int) -> datetime:  # the buffer's score is the event time in microseconds
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=score)

    try:
        buffers = SessionBuffers(client, max_turns=3, max_tokens=10_000)
        ref = SessionRef(f"t-{uuid.uuid4().hex[:8]}", "u", "s")
        await buffers.append({ref: [entry(s, 1) for s in range(1, 9)]})
        due = await buffers.due(ref, limit=3)  # e1..e3 folded; e4, e5 wait; e6..e8 are the window
        await buffers.fold(ref, due, text="e1 to e3", summarizer="t", input_tokens=1, output_tokens=1, agents=[])

        windowed = await buffers.forget_turn(ref, "e7", at(7))
        pending = await buffers.forget_turn(ref, "e4", at(4))
        absent = await buffers.forget_turn(ref, "e99", at(99))
        assert (windowed.removed, windowed.summary_dropped) == (1, False)
        assert (pending.removed, pending.summary_dropped) == (1, False)
        assert (absent.removed, absent.summary_dropped) == (0, False)
        assert [t["event_id"] for t in await buffers.read(ref)] == ["e5", "e6", "e8"]
        assert await buffers.summary(ref) is not None

        folded = await buffers.forget_turn(ref, "e2", at(2))  # in the summary's text, not in the buffer
        assert (folded.removed, folded.summary_dropped) == (0, True)
        assert await buffers.summary(ref) is None
        late = (await buffers.append({ref: [entry(2, 1)]}))[ref]  # the trim mark stays: folded turns stay out
        assert late.held == 3 and "e2" not in [t["event_id"] for t in await buffers.read(ref)]
    finally:
        await client.aclose()
