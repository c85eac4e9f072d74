"""The Redis Lua script against its reference semantics (``window``), on the real server."""

from __future__ import annotations

import uuid

import orjson
import redis.asyncio as aioredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from sinks.redis.buffer import BufferEntry, SessionBuffers, buffer_key, trim_mark_key, window
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
        tenant, session = f"t-{uuid.uuid4().hex[:8]}", "s"
        seen: list[BufferEntry] = []
        for batch in batches:
            # A score fixes the tokens: the same event redelivered is the same member.
            entries = [entry(score, (score * 7) % 30 + 1) for score, _ in batch]
            seen.extend(entries)
            await buffers.append({(tenant, session): entries})
            expected = window(seen, max_turns=max_turns, max_tokens=max_tokens)
            got = await buffers.read(tenant, session)
            assert [g["event_id"] for g in got] == [orjson.loads(e.member)["event_id"] for e in expected]
    finally:
        await client.aclose()


async def test_sessions_share_a_hash_slot_and_expire(stack: RunningStack) -> None:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        buffers = SessionBuffers(client, max_turns=5, max_tokens=100, ttl_s=120)
        await buffers.append({("acme", "s-9"): [entry(1, 1)], ("acme", "s-10"): [entry(2, 1), entry(3, 1)]})
        assert len(await buffers.read("acme", "s-9")) == 1
        assert len(await buffers.read("acme", "s-10")) == 2
        keys = [k async for k in client.scan_iter(match="ms:buf:{acme:s-*}")]
        assert sorted(keys) == [b"ms:buf:{acme:s-10}", b"ms:buf:{acme:s-9}"]
        # the buffer and its trim mark share the session's hash slot (the {...} tag)
        assert key_slot(buffer_key("acme", "s-9").encode()) == key_slot(trim_mark_key("acme", "s-9").encode())
        assert key_slot(buffer_key("acme", "s-9").encode()) != key_slot(buffer_key("acme", "s-10").encode())
        assert 0 < await client.ttl(b"ms:buf:{acme:s-9}") <= 120
        await client.delete(*keys)
    finally:
        await client.aclose()
