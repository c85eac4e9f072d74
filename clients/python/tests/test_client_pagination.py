"""The list methods and their ``iter_all``: the query each page sends (its cursor the previous
page's ``next_cursor``), and every item of every page, in order, once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from client_script import ok


def user(user_id: str) -> dict[str, Any]:
    return {"user_id": user_id, "episodes": 1, "last_seen": None}


def pages() -> list[httpx.Response]:
    return [
        ok({"users": [user("ann"), user("bob")], "next_cursor": "c1"}),
        ok({"users": [user("cy")], "next_cursor": "c2"}),
        ok({"users": [], "next_cursor": None}),
    ]


def test_iter_all_walks_every_page_passing_each_cursor_on(sync_client) -> None:
    client, script = sync_client(*pages())
    assert [u.user_id for u in client.users.iter_all("a_%", limit=2)] == ["ann", "bob", "cy"]
    sent = [list(r.url.params.multi_items()) for r in script.requests]
    assert sent == [
        [("q", "a_%"), ("limit", "2")],
        [("q", "a_%"), ("limit", "2"), ("cursor", "c1")],
        [("q", "a_%"), ("limit", "2"), ("cursor", "c2")],
    ]


async def test_async_iter_all_walks_every_page(async_client) -> None:
    client, script = async_client(*pages())
    assert [u.user_id async for u in client.users.iter_all()] == ["ann", "bob", "cy"]
    assert [r.url.params.get("cursor") for r in script.requests] == [None, "c1", "c2"]


def test_iter_all_is_lazy(sync_client) -> None:
    """Nothing is sent until the first item is asked for, and a page only when it is needed."""
    client, script = sync_client(*pages())
    items = client.users.iter_all()
    assert script.requests == []
    next(items)
    next(items)
    assert len(script.requests) == 1


def test_memories_list_sends_its_filters(sync_client) -> None:
    client, script = sync_client(ok({"user_id": "u1", "memories": [], "next_cursor": None}))
    since = datetime(2026, 11, 1, tzinfo=UTC)
    client.memories.list(
        "u1", memory_type=["episodic", "summary"], include_archived=False, since=since, agent_id="coder", limit=10,
        cursor="abc",
    )  # fmt: skip
    assert (script.requests[0].method, script.requests[0].url.path) == ("GET", "/v1/memories")
    assert list(script.requests[0].url.params.multi_items()) == [
        ("user_id", "u1"), ("memory_type", "episodic,summary"), ("include_archived", "false"),
        ("since", "2026-11-01T00:00:00+00:00"), ("agent_id", "coder"), ("limit", "10"), ("cursor", "abc"),
    ]  # fmt: skip


def test_whoami_and_the_audit_log(sync_client) -> None:
    identity = {"tenant_id": "acme", "key_id": "0123456789abcdef", "agent_id": None, "scopes": ["admin", "read"]}
    record = {
        "audit_id": "00000000-0000-0000-0000-000000000001", "seq": 7, "at": "2026-12-01T09:00:00Z",
        "actor": "0123456789abcdef", "action": "memory.delete", "subject": "x", "detail": {"kind": "episode"},
    }  # fmt: skip
    client, script = sync_client(ok(identity), ok({"records": [record], "next_cursor": None}))
    assert client.whoami().agent_id is None
    [found] = list(client.audit.iter_all(action="memory."))
    assert (found.seq, found.detail) == (7, {"kind": "episode"})
    assert [r.url.path for r in script.requests] == ["/v1/whoami", "/v1/audit"]
    assert script.requests[1].url.params.get("action") == "memory."
