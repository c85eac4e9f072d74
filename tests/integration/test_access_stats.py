"""Access statistics live apart from the memories (migration 0013): a read writes one narrow
row and never rewrites the memory's own; the row goes with its memory when that is
forgotten or its user erased; retention reads it; row-level security binds it."""

from __future__ import annotations

import uuid

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from sinks.postgres.maintenance import RetentionPolicy, delete_expired, forget
from sinks.postgres.tenancy import tenant_transaction
from tests.fixtures.stack import RunningStack
from tests.integration.test_read_path import store


def access_rows(stack: RunningStack, tenant: str) -> dict[uuid.UUID, tuple[object, ...]]:
    with stack.db(tenant) as conn:
        rows = conn.execute("SELECT memory_id, kind, user_id, access_count FROM memory_access").fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}  # type: ignore[misc]


def versions(stack: RunningStack, tenant: str, ids: list[uuid.UUID]) -> list[str]:
    """Each episode's row version (``xmin`` changes whenever the row is written)."""
    with stack.db(tenant) as conn:
        rows = conn.execute(
            "SELECT xmin::text FROM episodes WHERE event_id = ANY(%s) ORDER BY event_id", (ids,)
        ).fetchall()
    return [str(r[0]) for r in rows]


async def read(gateway: httpx.AsyncClient, gateway_app: FastAPI, q: str, *, k: int = 10) -> list[str]:
    response = await gateway.get("/v1/search", params={"user_id": "u1", "q": q, "k": k})
    assert response.status_code == 200, response.text
    await gateway_app.state.gateway.access.flush()
    return [h["id"] for h in response.json()["hits"]]


async def test_a_read_counts_itself_without_rewriting_the_memory(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    ids = await store(stack, tenant, [{"content": "the on-call rota is in the wiki"},
                                      {"content": "lunch is at noon on fridays"}])  # fmt: skip
    before = versions(stack, tenant, ids)
    hits = await read(gateway, gateway_app, "on-call rota wiki")
    assert str(ids[0]) in hits
    assert access_rows(stack, tenant)[ids[0]] == ("episode", "u1", 1)
    await read(gateway, gateway_app, "where is the on-call rota")
    assert access_rows(stack, tenant)[ids[0]] == ("episode", "u1", 2)
    assert versions(stack, tenant, ids) == before, "a read wrote no new version of any episode"


async def test_the_statistics_go_with_a_forgotten_memory_and_an_erased_user(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    ids = await store(stack, tenant, [{"content": "the billing service deploys with rsync"},
                                      {"content": "the billing dashboard is dark themed"},
                                      {"content": "the billing export runs nightly"}])  # fmt: skip
    await read(gateway, gateway_app, "billing")
    assert set(access_rows(stack, tenant)) == set(ids)
    assert (await gateway.delete(f"/v1/memories/{ids[0]}")).status_code == 200
    assert set(access_rows(stack, tenant)) == set(ids[1:]), "forgetting one memory takes its statistics"
    with stack.db(tenant) as conn:
        conn.execute("UPDATE episodes SET expires_at = now() - interval '1 second' WHERE event_id = %s", (ids[1],))
    async with tenant_transaction(gateway_app.state.gateway.pool, tenant) as conn:
        assert (await delete_expired(conn, tenant))["episodes"] == 1
    assert set(access_rows(stack, tenant)) == {ids[2]}, "an expired memory takes its statistics"
    assert (await gateway.post("/v1/users/u1/erase")).status_code == 200
    assert access_rows(stack, tenant) == {}, "an erasure leaves no statistic of the user"


async def test_retention_forgets_what_nobody_read_for_long(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    read_one, unread = await store(stack, tenant, [{"content": "the staging cluster runs in zurich"},
                                                   {"content": "grandma's lasagne needs four hours"}])  # fmt: skip
    with stack.db(tenant) as conn:  # both written long ago
        conn.execute("UPDATE episodes SET ingested_at = now() - interval '40 days'")
    assert await read(gateway, gateway_app, "staging cluster zurich", k=1) == [str(read_one)]
    async with tenant_transaction(gateway_app.state.gateway.pool, tenant) as conn:
        report = await forget(conn, tenant, RetentionPolicy(unaccessed_days=30), dry_run=False)
    assert report.by_rule["unaccessed_days"] == [str(unread)]
    with stack.db(tenant) as conn:
        assert [r[0] for r in conn.execute("SELECT event_id FROM episodes").fetchall()] == [read_one]
    assert set(access_rows(stack, tenant)) == {read_one}


async def test_row_level_security_binds_the_statistics(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    [event] = await store(stack, tenant, [{"content": "the vpn config lives in the vault"}])
    await read(gateway, gateway_app, "vpn config")
    other = f"{tenant}-other"
    with stack.db(other) as conn:
        assert conn.execute("SELECT count(*) FROM memory_access").fetchone() == (0,)
        assert conn.execute("UPDATE memory_access SET access_count = 0").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO memory_access (tenant_id, kind, memory_id, user_id, access_count, last_accessed_at)"
                " VALUES (%s, 'episode', %s, 'u1', 1, now())",
                (tenant, event),
            )
    with stack.owner_db() as conn:  # FORCE: the owner sees nothing without a tenant either
        assert conn.execute("SELECT count(*) FROM memory_access").fetchone() == (0,)
    assert access_rows(stack, tenant)[event][2] == 1
