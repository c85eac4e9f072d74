"""A ``Retry-After`` is really waited out by both clients (no injected sleep here): the sync
client in a thread and the async one on the loop, at the same time, so the test takes ~1 s."""

from __future__ import annotations

import asyncio
import time

import httpx

from client_script import KEY, Script, failure, ok
from memstream_client import AsyncMemstream, Memstream


def scripted_answers() -> Script:
    return Script(failure(429, "rate_limited", headers={"Retry-After": "1"}), ok({"rules": []}))


def sync_call_s() -> float:
    script = scripted_answers()
    with Memstream("http://gateway", KEY, http_client=httpx.Client(transport=httpx.MockTransport(script))) as client:
        started = time.monotonic()
        client.rules.list()
        elapsed = time.monotonic() - started
    assert len(script.requests) == 2
    return elapsed


async def async_call_s() -> float:
    script = scripted_answers()
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    async with http, AsyncMemstream("http://gateway", KEY, http_client=http) as client:
        started = time.monotonic()
        await client.rules.list()
        elapsed = time.monotonic() - started
    assert len(script.requests) == 2
    return elapsed


async def test_both_clients_really_wait_the_retry_after() -> None:
    sync_s, async_s = await asyncio.gather(asyncio.to_thread(sync_call_s), async_call_s())
    assert 0.95 <= sync_s < 3 and 0.95 <= async_s < 3
