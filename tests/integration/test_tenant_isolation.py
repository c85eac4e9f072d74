"""Attacks on tenant and agent isolation, through every endpoint and in the database itself.
Each must fail: the tenant comes from the key, and row-level security backs it up."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from memstream.embedder.local import WordLlamaEmbedder
from sinks.postgres.pool import create_pool
from sinks.postgres.queries.retrieval import Filters, Probe, candidate_lists_many
from sinks.postgres.tenancy import act_as, tenant_transaction
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import count_rows, turn

EMBEDDER = WordLlamaEmbedder()

INJECTIONS = [
    "' OR '1'='1",
    "'; DROP TABLE episodes; --",
    "x') UNION SELECT content FROM episodes --",
    "%(tenant_id)s",
    "$1",
    "\\'; SELECT pg_sleep(5); --",
]


@pytest.fixture
async def victim(stack: RunningStack, running_worker: WorkerHandle, gateway_app: FastAPI) -> dict[str, Any]:
    """Tenant A with memory in every store: episodes, the event log, a buffer, a rule."""
    tenant = f"victim-{uuid.uuid4().hex[:8]}"
    key = stack.key(tenant)
    async with client_for(gateway_app, key) as a:
        response = await a.post(
            "/v1/turns",
            json={"turns": [turn(tenant, "v-session", "the victim's secret plan is to buy a teapot",
                                  user_id="v-user", shared=True)]},
        )  # fmt: skip
        assert response.status_code == 202
        rule = await a.post("/v1/permissions/rules", json={"tool": "shell", "effect": "BLOCK", "pattern": "^deploy"})
        assert rule.status_code == 201
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 1)
    return {"tenant": tenant, "key": key, "rule_id": rule.json()["rule_id"]}


async def test_another_tenants_memory_is_out_of_reach_through_every_endpoint(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, victim: dict[str, Any]
) -> None:
    other = victim["tenant"]
    # Forged tenant in the query or body: refused outright.
    forged = [
        await gateway.get("/v1/search", params={"tenant_id": other, "user_id": "v-user", "q": "teapot"}),
        await gateway.get("/v1/sessions/v-session/buffer", params={"tenant_id": other, "user_id": "v-user"}),
        await gateway.post("/v1/turns", json=turn(other, "s", "planted by the attacker")),
    ]
    assert [r.status_code for r in forged] == [403, 403, 403]
    # With its own tenant, the attacker's key finds nothing of the victim's.
    search = await gateway.get("/v1/search", params={"user_id": "v-user", "q": "secret plan teapot"})
    assert search.status_code == 200 and search.json()["hits"] == []
    buffer = await gateway.get("/v1/sessions/v-session/buffer", params={"user_id": "v-user"})
    assert buffer.json()["turns"] == []
    rules = await gateway.get("/v1/permissions/rules")
    assert all(r["rule_id"] != victim["rule_id"] for r in rules.json()["rules"])
    assert (await gateway.delete(f"/v1/permissions/rules/{victim['rule_id']}")).status_code == 404
    verdict = await gateway.post(
        "/v1/permissions/evaluate", json={"session_id": "s", "tool": "shell", "command": "deploy now"}
    )
    assert verdict.json()["decision"] == "PENDING", "the victim's BLOCK rule must not apply here"
    erased = await gateway.post("/v1/users/v-user/erase")
    assert erased.status_code == 200 and erased.json()["episodes"] == 0
    # The victim's memory is untouched by all of it.
    assert count_rows(stack, "episodes", other) == 1
    assert count_rows(stack, "episodes", tenant) == 0


@pytest.mark.parametrize("payload", INJECTIONS)
async def test_injection_payloads_in_every_text_parameter_are_inert(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, victim: dict[str, Any], payload: str
) -> None:
    responses = [
        await gateway.get("/v1/search", params={"user_id": "v-user", "q": payload}),
        await gateway.get("/v1/search", params={"user_id": payload, "q": "teapot"}),
        await gateway.get("/v1/search", params={"user_id": "v-user", "q": "x", "project_id": payload}),
        await gateway.get(f"/v1/sessions/{payload}/buffer"),
        await gateway.post("/v1/permissions/evaluate", json={"session_id": "s", "tool": payload, "command": payload}),
        await gateway.post(
            "/v1/permissions/rules",
            json={"tool": payload, "effect": "ALLOW", "pattern": "^safe$", "description": payload},
        ),
        await gateway.get("/v1/permissions/rules", params={"tool": payload}),
        await gateway.post("/v1/turns", json=turn(tenant, "s-inj", payload, metadata={"k": payload})),
        await gateway.post(f"/v1/users/{payload}/erase"),
    ]
    for response in responses:
        assert response.status_code < 500, response.text
        if response.request.url.path == "/v1/search" and response.status_code == 200:
            assert all("teapot" not in h["content"] for h in response.json()["hits"])
    assert count_rows(stack, "episodes", victim["tenant"]) == 1
    with stack.superuser_db() as conn:
        assert conn.execute("SELECT to_regclass('public.episodes')").fetchone() == ("episodes",)


async def test_row_level_security_is_the_boundary_not_just_the_application(
    stack: RunningStack, victim: dict[str, Any], tenant: str
) -> None:
    other = victim["tenant"]
    with stack.db() as conn:  # no tenant set: nothing at all
        for table in ("episodes", "event_log", "audit_log", "permission_rules", "erasures"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table  # noqa: S608
    with stack.db(tenant) as conn:  # another tenant set: nothing of the victim's, even asked by name
        assert conn.execute("SELECT count(*) FROM episodes WHERE tenant_id = %s", (other,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM audit_log WHERE tenant_id = %s", (other,)).fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO permission_rules (tenant_id, tool, effect, pattern) VALUES (%s, 'x', 'ALLOW', 'y')",
                (other,),
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM api_keys")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SET ROLE memstream_owner")
    with stack.owner_db() as conn:  # FORCE: even the owner sees nothing without a tenant
        assert conn.execute("SELECT count(*) FROM episodes").fetchone() == (0,)


async def test_a_pooled_connection_never_carries_a_tenant_into_the_next_request(gateway_app: FastAPI) -> None:
    pool = gateway_app.state.gateway.pool
    async with tenant_transaction(pool, "tenant-a", agent_id="agent-a") as conn:
        cur = await conn.execute("SELECT current_setting('app.tenant_id', true)")
        assert await cur.fetchone() == ("tenant-a",)
    for _ in range(pool.get_stats().get("pool_size", 1) + 1):
        async with pool.connection() as conn:
            with pytest.raises(RuntimeError, match="outside a transaction"):
                await act_as(conn, "tenant-b")
            cur = await conn.execute(
                "SELECT coalesce(current_setting('app.tenant_id', true), ''),"
                " coalesce(current_setting('app.agent_id', true), '')"
            )
            assert await cur.fetchone() == ("", "")


async def test_a_read_without_begin_holds_its_tenant_in_every_round_trip_and_leaves_nothing_behind(
    gateway_app: FastAPI,
) -> None:
    """The read path's transactions (``tenant_transaction(pipeline=True)``) are the pipeline's
    implicit one: no BEGIN, one transaction until the pipeline's Sync, the tenant's settings in
    every round trip of it, and none of them left on the connection afterwards, nor after a
    read that failed."""
    pool = gateway_app.state.gateway.pool
    seen = []
    async with tenant_transaction(pool, "tenant-a", agent_id="agent-a", pipeline=True) as conn:
        for _ in range(3):  # each result read is a round trip of its own (a flush, no Sync)
            cur = await conn.execute(
                "SELECT current_setting('app.tenant_id', true), current_setting('app.agent_id', true), now()"
            )
            seen.append(await cur.fetchone())
    assert {row[:2] for row in seen} == {("tenant-a", "agent-a")}
    assert len({row[2] for row in seen}) == 1, "one transaction (now() is its start) for every round trip"
    with pytest.raises(psycopg.errors.DivisionByZero):
        async with tenant_transaction(pool, "tenant-a", agent_id="agent-a", pipeline=True) as conn:
            await (await conn.execute("SELECT 1 / 0")).fetchone()
    for _ in range(pool.get_stats().get("pool_size", 1) + 1):
        async with pool.connection() as conn:
            assert not conn.autocommit, "lent back as the pool lends it"
            cur = await conn.execute(
                "SELECT coalesce(current_setting('app.tenant_id', true), ''),"
                " coalesce(current_setting('app.agent_id', true), '')"
            )
            assert await cur.fetchone() == ("", "")


async def test_reads_of_two_tenants_interleaved_on_a_small_pool_each_find_their_own_only(
    stack: RunningStack, running_worker: WorkerHandle, gateway_app: FastAPI
) -> None:
    """Many searches of two tenants at once over a pool of two connections: each connection
    serves both tenants in turn, and each answer holds its own tenant's memory only."""
    tenants = [f"iso-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for name in tenants:
        async with client_for(gateway_app, stack.key(name)) as client:
            response = await client.post(
                "/v1/turns", json={"turns": [turn(name, "s", f"the deploy runbook of {name} says rsync", user_id="u")]}
            )
            assert response.status_code == 202
    for name in tenants:
        await eventually(lambda name=name: count_rows(stack, "episodes", name) == 1)
    pool = create_pool(stack.settings.require_database_url(), name="interleave-test", min_size=2, max_size=2)
    await pool.open(wait=True)

    async def contents(name: str, i: int) -> set[str]:
        scope = Filters(tenant_id=name, user_id="u")
        (query,) = await EMBEDDER.embed([f"how do we deploy {i}"])
        async with tenant_transaction(pool, name, pipeline=True) as conn:
            ((near, matched),) = await candidate_lists_many(
                conn, scope, [Probe(query, f"deploy runbook {i}")], model=EMBEDDER.model_name, limit=5, scan="exact"
            )
        return {c.content for c in (*near, *matched)}

    try:
        found = await asyncio.gather(*(contents(tenants[i % 2], i) for i in range(40)))
    finally:
        await pool.close()
    for i, contents_found in enumerate(found):
        assert contents_found == {f"the deploy runbook of {tenants[i % 2]} says rsync"}, i


async def test_agent_private_memory_is_invisible_to_other_agents(
    stack: RunningStack, running_worker: WorkerHandle, gateway_app: FastAPI, tenant: str
) -> None:
    key_x = stack.key(tenant, agent="agent-x", scopes=("ingest", "read"))
    key_y = stack.key(tenant, agent="agent-y", scopes=("ingest", "read"))
    key_tenant = stack.key(tenant, scopes=("read",))
    async with client_for(gateway_app, key_x) as x, client_for(gateway_app, key_y) as y:
        posted = await x.post(
            "/v1/turns",
            json={"turns": [
                {"user_id": "u1", "session_id": "sx", "role": "user", "content": "private note: the vault code is tulip"},
                {"user_id": "u1", "session_id": "sx", "role": "user", "content": "shared note: the vault is in Bangkok",
                 "shared": True},
            ]},
        )  # fmt: skip
        assert posted.status_code == 202
        impersonation = await y.post("/v1/turns", json=turn(tenant, "sy", "I am agent x", agent_id="agent-x"))
        assert impersonation.status_code == 403
        await eventually(lambda: count_rows(stack, "episodes", tenant) == 2)

        async def buffered() -> bool:  # the buffer stage may finish after the episodes stage
            return len((await x.get("/v1/sessions/sx/buffer", params={"user_id": "u1"})).json()["turns"]) == 2

        await eventually(buffered)
        seen_by_y = await y.get("/v1/search", params={"user_id": "u1", "q": "vault code tulip Bangkok"})
        assert [h["content"] for h in seen_by_y.json()["hits"]] == ["shared note: the vault is in Bangkok"]
        buffer_y = await y.get("/v1/sessions/sx/buffer", params={"user_id": "u1"})
        assert [t["content"] for t in buffer_y.json()["turns"]] == ["shared note: the vault is in Bangkok"]
        seen_by_x = await x.get("/v1/search", params={"user_id": "u1", "q": "vault code tulip Bangkok"})
        assert len(seen_by_x.json()["hits"]) == 2
    async with client_for(gateway_app, key_tenant) as whole:
        assert len((await whole.get("/v1/search", params={"user_id": "u1", "q": "vault"})).json()["hits"]) == 2
    with stack.db(tenant) as conn:
        conn.execute("SELECT set_config('app.agent_id', 'agent-y', false)")
        rows = conn.execute("SELECT content FROM episodes").fetchall()
    assert rows == [("shared note: the vault is in Bangkok",)], "RLS itself hides agent x's private memory"
