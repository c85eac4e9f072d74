"""Gateway authentication: keys, scopes, revocation and the per-key rate limit."""

from __future__ import annotations

import asyncio

import psycopg
from fastapi import FastAPI

from sinks.postgres.api_keys import list_keys, revoke_key
from tests.fixtures.stack import RunningStack, client_for
from tests.integration.helpers import turn

ENDPOINTS = [
    ("POST", "/v1/turns"),
    ("GET", "/v1/sessions/s1/buffer"),
    ("GET", "/v1/search?user_id=u&q=x"),
    ("POST", "/v1/permissions/evaluate"),
    ("POST", "/v1/permissions/allow-once"),
    ("GET", "/v1/permissions/rules"),
    ("POST", "/v1/users/u/erase"),
    ("GET", "/v1/tenant/privacy"),
]


async def test_every_endpoint_needs_a_valid_key(stack: RunningStack, gateway_app: FastAPI, tenant: str) -> None:
    stale = stack.key(tenant)
    key_id = stale.split("_")[1]
    with psycopg.connect(stack.settings.require_owner_database_url(), autocommit=True) as conn:
        assert revoke_key(conn, key_id)
        assert [k.revoked_at is not None for k in list_keys(conn, tenant)] == [True]
    forged = stale[:-4] + ("AAAA" if not stale.endswith("AAAA") else "BBBB")
    for key in (None, "not-a-key", "msk_0000000000000000_" + "x" * 43, forged, stale):
        async with client_for(gateway_app, key) as client:
            for method, path in ENDPOINTS:
                response = await client.request(method, path, json={})
                assert response.status_code == 401, (key, path, response.text)
                assert response.headers["www-authenticate"] == "Bearer"
    async with client_for(gateway_app, None) as client:
        response = await client.get("/v1/search?user_id=u&q=x", headers={"x-api-key": stack.key(tenant)})
        assert response.status_code == 200, "X-API-Key works as well as Authorization: Bearer"


async def test_scopes_are_enforced(stack: RunningStack, gateway_app: FastAPI, tenant: str) -> None:
    async with client_for(gateway_app, stack.key(tenant, scopes=("read",))) as reader:
        denied = await reader.post("/v1/turns", json=turn(tenant, "s1", "hello"))
        assert denied.status_code == 403 and "'ingest' scope" in denied.json()["error"]["message"]
        assert (await reader.post("/v1/users/u/erase")).status_code == 403
        rule = {"tool": "shell", "effect": "ALLOW", "pattern": "^ls"}
        assert (await reader.post("/v1/permissions/rules", json=rule)).status_code == 403
        assert (await reader.put("/v1/tenant/privacy", json={"redact_email": True})).status_code == 403
        assert (await reader.get("/v1/search", params={"user_id": "u", "q": "x"})).status_code == 200
    async with client_for(gateway_app, stack.key(tenant, scopes=("ingest",))) as writer:
        assert (await writer.get("/v1/search", params={"user_id": "u", "q": "x"})).status_code == 403
        assert (await writer.post("/v1/turns", json=turn(tenant, "s1", "hello"))).status_code == 202


async def test_rate_limit_answers_429_with_retry_after(stack: RunningStack, gateway_app: FastAPI, tenant: str) -> None:
    async with client_for(gateway_app, stack.key(tenant, rate_limit_per_s=1)) as client:
        statuses = [(await client.get("/v1/search", params={"user_id": "u", "q": "x"})).status_code for _ in range(3)]
        assert statuses[0] == 200 and 429 in statuses
        limited = await client.get("/v1/search", params={"user_id": "u", "q": "x"})
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert "rate limit" in limited.json()["error"]["message"]
        await asyncio.sleep(1.1)
        assert (await client.get("/v1/search", params={"user_id": "u", "q": "x"})).status_code == 200


async def test_metrics_count_refusals(gateway_app: FastAPI) -> None:
    async with client_for(gateway_app, None) as client:
        await client.get("/v1/search?user_id=u&q=x")
        metrics = await client.get("/metrics")
    assert metrics.status_code == 200
    assert 'memstream_gateway_auth_failures_total{status="401"}' in metrics.text
