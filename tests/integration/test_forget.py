"""Forgetting one memory (``DELETE /v1/memories/{id}``) on the real stack: a turn leaves search,
the context and its session buffer, a fact leaves the facts, search and the graph (its earlier
version taking its place), both are audited, and neither comes back — not by a redelivery, not
by ``memstream replay``, not even when forgotten while a replay runs. Who may forget what: a
tenant's admin key anything, an agent's key its own agent's memories, nobody another tenant's."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import streams.replay.runner
from sinks.postgres.erasure import user_ref
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import count_rows, post_turns, turn
from tests.integration.test_replay import live_digest, replay, settled

PROJECT = "CloudRetail"
BEFORE = "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB."
AFTER = "We moved CloudRetail from FastAPI to Litestar."


def key_id(api_key: str) -> str:
    return api_key.split("_")[1]


async def search(gateway: httpx.AsyncClient, user: str, q: str, **params: Any) -> list[dict[str, Any]]:
    response = await gateway.get("/v1/search", params={"user_id": user, "q": q, **params})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


async def forget(gateway: httpx.AsyncClient, memory_id: object) -> httpx.Response:
    return await gateway.delete(f"/v1/memories/{memory_id}")


def audited(stack: RunningStack, tenant: str) -> list[tuple[Any, ...]]:
    with stack.db(tenant) as conn:
        return conn.execute(
            "SELECT actor, subject, detail, at FROM audit_log WHERE action = 'memory.delete' ORDER BY seq"
        ).fetchall()


async def test_a_forgotten_turn_leaves_search_context_and_buffer_and_stays_gone_after_a_replay(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, api_key: str, tenant: str
) -> None:
    start = datetime.now(UTC) - timedelta(minutes=5)
    said = ["My locker code is 4512, please remember it.", "The train leaves at nine.", "I like green tea."]
    turns = [
        turn(tenant, "s1", text, event_id=str(uuid.uuid4()), event_time=(start + timedelta(seconds=i)).isoformat())
        for i, text in enumerate(said)
    ]
    ids = await post_turns(gateway, turns)
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 3)
    await settled(stack, tenant)  # both workers are done with the turns
    doomed = ids[0]
    assert any(h["id"] == doomed for h in await search(gateway, "user-1", "locker code"))
    buffer_url, context_params = "/v1/sessions/s1/buffer", {"user_id": "user-1", "session_id": "s1"}
    buffered = (await gateway.get(buffer_url, params={"user_id": "user-1"})).json()["turns"]
    assert doomed in [t["event_id"] for t in buffered]

    response = await forget(gateway, doomed)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["kind"], body["id"], body["memory_type"], body["repeated"]) == ("episode", doomed, "episodic", False)
    assert (body["buffer_turns"], body["summary_dropped"], body["restored_fact_id"]) == (1, False, None)

    async def gone() -> None:
        assert doomed not in [h["id"] for h in await search(gateway, "user-1", "locker code 4512")]
        assert all("4512" not in h["content"] for h in await search(gateway, "user-1", "locker code 4512"))
        context = (await gateway.get("/v1/context", params={**context_params, "query": "locker code"})).json()
        assert "4512" not in context["prompt"] and doomed not in [h["id"] for h in context["relevant"]]
        buffer = (await gateway.get(buffer_url, params={"user_id": "user-1"})).json()
        held = [t["event_id"] for t in buffer["turns"] + buffer["pending"]]
        assert doomed not in held and set(ids[1:]) <= set(held)

    await gone()
    assert count_rows(stack, "episodes", tenant) == 2
    [(actor, subject, detail, at)] = audited(stack, tenant)
    assert (actor, subject) == (key_id(api_key), doomed)
    assert detail == {"kind": "episode", "memory_type": "episodic", "user_ref": user_ref(tenant, "user-1")}
    assert abs(at - datetime.fromisoformat(body["forgotten_at"])) < timedelta(seconds=5)

    # Asking again is answered as the first time (a retry after a lost answer), and changes nothing.
    again = await forget(gateway, doomed)
    assert again.status_code == 200 and again.json() == {**body, "repeated": True, "buffer_turns": 0}
    assert len(audited(stack, tenant)) == 1

    # A redelivery of the same turn (same id) is not stored again, in Postgres or in the buffer.
    [_, marker] = await post_turns(gateway, [turns[0], turn(tenant, "s1", "marker", event_time=start.isoformat())])

    async def marker_buffered() -> bool:  # consumed after the redelivered turn (one session: one partition)
        buffer = (await gateway.get(buffer_url, params={"user_id": "user-1"})).json()
        return marker in [t["event_id"] for t in buffer["turns"] + buffer["pending"]]

    await eventually(marker_buffered)
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 3)  # the marker only
    # The event log is written concurrently with the buffer and the episodes: it may come last.
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 4)
    await gone()

    # The key test: memory rebuilt from the event log (which keeps the turn) does not bring it back —
    # into fresh tables switched in, in place with the buffers, and the rebuild equals the live memory.
    assert (await replay(stack, tenant)).status == "switched"
    assert (await replay(stack, tenant, "in-place", buffers=True)).status == "done"
    await gone()
    assert count_rows(stack, "episodes", tenant) == 3
    verified = await replay(stack, tenant, "verify")
    assert verified.matches, (verified.digest, verified.live_digest)


async def facts(gateway: httpx.AsyncClient, user: str) -> list[dict[str, Any]]:
    response = await gateway.get("/v1/entities", params={"user_id": user, "project_id": PROJECT})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["facts"]
    return found


async def history(gateway: httpx.AsyncClient, user: str) -> list[dict[str, Any]]:
    response = await gateway.get("/v1/entities/backend framework/history", params={"user_id": user})
    found: list[dict[str, Any]] = response.json()["facts"]
    return found


async def neighbors(gateway: httpx.AsyncClient, user: str) -> set[str]:
    response = await gateway.get("/v1/graph/neighbors", params={"entity": "cloudretail", "user_id": user})
    return {n["entity"] for n in response.json()["neighbors"]}


async def superseded_fact(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> tuple[str, str]:
    """FastAPI, then Litestar (said twice: merged into one version); returns the ids of the two
    versions of the backend framework, once the workers are done."""
    start = datetime.now(UTC) - timedelta(hours=1)
    said = [BEFORE, AFTER, AFTER]
    await post_turns(gateway, [
        turn(tenant, "s1", text, project_id=PROJECT, event_time=(start + timedelta(minutes=i)).isoformat())
        for i, text in enumerate(said)
    ])  # fmt: skip

    async def versions() -> bool:
        found = await history(gateway, "user-1")
        return len(found) == 2 and len(found[1]["sources"]) == 2

    await eventually(versions, timeout_s=60)
    await settled(stack, tenant)
    first, current = await history(gateway, "user-1")
    assert current["valid_to"] is None and "Litestar" in current["summary"]
    reached = await neighbors(gateway, "user-1")
    assert "litestar" in reached and "fastapi" not in reached, reached
    return str(first["fact_id"]), str(current["fact_id"])


async def assert_fact_forgotten(gateway: httpx.AsyncClient, first: str, current: str) -> None:
    """The Litestar version is gone everywhere; the FastAPI one is current again."""
    [backend] = [f for f in await facts(gateway, "user-1") if f["entity"] == "backend framework"]
    assert (backend["fact_id"], backend["valid_to"], backend["version"]) == (first, None, 1)
    assert [f["fact_id"] for f in await history(gateway, "user-1")] == [first]
    hits = await search(gateway, "user-1", "CloudRetail Litestar backend", memory_types="fact", project_id=PROJECT)
    assert current not in [h["id"] for h in hits] and all("Litestar" not in h["content"] for h in hits)
    reached = await neighbors(gateway, "user-1")
    assert "fastapi" in reached and "litestar" not in reached, reached
    params = {"user_id": "user-1", "session_id": "elsewhere", "project_id": PROJECT, "query": "backend"}
    context = (await gateway.get("/v1/context", params=params)).json()
    assert first in context["facts"] and current not in context["facts"], context["facts"]


async def test_a_forgotten_fact_gives_way_to_its_earlier_version_and_stays_gone_after_a_replay(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, api_key: str, tenant: str
) -> None:
    first, current = await superseded_fact(stack, gateway, tenant)
    hits = await search(gateway, "user-1", "CloudRetail Litestar backend", memory_types="fact", project_id=PROJECT)
    assert current in [h["id"] for h in hits], "the id a search hit carries is what is forgotten"

    response = await forget(gateway, current)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["kind"], body["memory_type"], body["restored_fact_id"], body["buffer_turns"]) == (
        "fact", "fact", first, 0,
    )  # fmt: skip
    await assert_fact_forgotten(gateway, first, current)
    [(actor, subject, detail, _)] = audited(stack, tenant)
    assert (actor, subject, detail["kind"], detail["statements"], detail["restored_fact_id"]) == (
        key_id(api_key), current, "fact", 2, first,
    )  # fmt: skip

    # A rebuild re-extracts both statements from the log and skips them: it equals the live memory.
    verified = await replay(stack, tenant, "verify")
    assert verified.matches, (verified.digest, verified.live_digest)
    assert (await replay(stack, tenant)).status == "switched"
    await assert_fact_forgotten(gateway, first, current)
    assert (await forget(gateway, current)).json()["repeated"] is True

    # Said again in a new turn, it is a new statement: remembered like any other.
    later = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    await post_turns(gateway, [turn(tenant, "s2", AFTER, project_id=PROJECT, event_time=later)])

    async def learnt_again() -> bool:
        return any("Litestar" in f["summary"] for f in await facts(gateway, "user-1"))

    await eventually(learnt_again, timeout_s=60)


async def test_what_is_forgotten_while_a_replay_runs_stays_forgotten_after_its_switch(
    stack: RunningStack,
    running_memory_worker: WorkerHandle,
    gateway: httpx.AsyncClient,
    tenant: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, current = await superseded_fact(stack, gateway, tenant)
    hits = await search(gateway, "user-1", "FastAPI AlloyDB", memory_types="episodic", project_id=PROJECT)
    [episode] = [h["id"] for h in hits if h["content"] == BEFORE]
    original = streams.replay.runner.lock_live

    async def forget_first(*args: Any, **kwargs: Any) -> None:
        """Forgotten after the rebuild, before the switch: the shadow tables still hold both."""
        for memory in (current, episode):
            assert (await forget(gateway, memory)).status_code == 200
        monkeypatch.setattr(streams.replay.runner, "lock_live", original)
        await original(*args, **kwargs)

    monkeypatch.setattr(streams.replay.runner, "lock_live", forget_first)
    assert (await replay(stack, tenant)).status == "switched"
    assert streams.replay.runner.lock_live is original, "the forgetting ran during the replay"
    await assert_fact_forgotten(gateway, first, current)
    assert episode not in [h["id"] for h in await search(gateway, "user-1", "FastAPI AlloyDB")]
    assert (await replay(stack, tenant, "verify")).digest == await live_digest(stack, tenant)


async def test_who_may_forget_what(
    stack: RunningStack,
    running_worker: WorkerHandle,
    gateway_app: FastAPI,
    gateway: httpx.AsyncClient,
    api_key: str,
    tenant: str,
) -> None:
    keys = {
        "a": stack.key(tenant, agent="agent-a", scopes=("ingest", "read")),
        "b": stack.key(tenant, agent="agent-b", scopes=("ingest", "read")),
        "a-reader": stack.key(tenant, agent="agent-a", scopes=("read",)),
        "reader": stack.key(tenant, scopes=("read",)),
        "writer": stack.key(tenant, scopes=("ingest", "read")),
        "stranger": stack.key(f"t-{uuid.uuid4().hex[:10]}"),
    }
    clients = {name: client_for(gateway_app, key) for name, key in keys.items()}
    try:
        a, b = clients["a"], clients["b"]
        [a_private, a_shared, a_third] = await post_turns(a, [
            {"user_id": "u", "session_id": "s", "role": "user", "content": "agent a, private"},
            {"user_id": "u", "session_id": "s", "role": "user", "content": "agent a, shared", "shared": True},
            {"user_id": "u", "session_id": "s", "role": "user", "content": "agent a, private too"},
        ])  # fmt: skip
        [b_private] = await post_turns(b, [{"user_id": "u", "session_id": "s", "role": "user", "content": "b's"}])
        await eventually(lambda: count_rows(stack, "episodes", tenant) == 4)

        never = await forget(gateway, uuid.uuid4())
        assert never.status_code == 404 and never.json()["error"]["code"] == "not_found"
        # Another agent's private memory, another tenant's: answered exactly like no memory at all.
        for client, memory in ((b, a_private), (clients["stranger"], a_private), (clients["stranger"], b_private)):
            refused = await forget(client, memory)
            assert (refused.status_code, refused.json()) == (404, never.json())
        # Another agent's shared memory is visible, but not that agent's key's to forget.
        shared = await forget(b, a_shared)
        assert shared.status_code == 403 and shared.json()["error"]["code"] == "wrong_agent"
        assert "agent-a" in shared.json()["error"]["message"]
        # Scopes: read only (an agent's or the tenant's), and a tenant-level key without admin.
        for name, wanted in (("a-reader", "ingest"), ("reader", "admin"), ("writer", "admin")):
            refused = await forget(clients[name], a_third)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "missing_scope", name
            assert f"'{wanted}'" in refused.json()["error"]["message"], name
        invalid = await forget(a, "not-a-uuid")
        assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "invalid_request"
        assert count_rows(stack, "episodes", tenant) == 4, "nothing was forgotten so far"

        # Its own memories, private or shared, an agent's key may forget.
        for memory in (a_private, a_shared):
            done = await forget(a, memory)
            assert done.status_code == 200 and done.json()["repeated"] is False, done.text
        assert (await forget(b, b_private)).status_code == 200
        # A forgotten private memory stays invisible to other agents; the tenant's admin key sees it was forgotten.
        assert (await forget(b, a_private)).status_code == 404
        assert (await forget(gateway, a_private)).json()["repeated"] is True
        assert (await forget(b, a_shared)).status_code == 403
        # The tenant's admin key forgets any agent's memory.
        assert (await forget(gateway, a_third)).json()["repeated"] is False
        assert count_rows(stack, "episodes", tenant) == 0
        actors = [row[0] for row in audited(stack, tenant)]
        assert actors == [key_id(keys["a"])] * 2 + [key_id(keys["b"]), key_id(api_key)]
    finally:
        for client in clients.values():
            await client.aclose()
