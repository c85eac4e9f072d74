"""The read path on the real stack: the context of session 2 in the seed scenario, ranking
(decay, MMR), what is never served, decomposition, filters, score parts, access statistics."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest
from fastapi import FastAPI
from pgvector.psycopg import register_vector_async
from psycopg.types import TypeInfo

from memstream.embedder.local import WordLlamaEmbedder
from ops.demo import PROJECT
from schemas.turns import Turn
from sinks.postgres import pool as pool_module
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.pool import create_pool
from sinks.postgres.tenancy import tenant_transaction
from sinks.postgres.tenant_settings import PolicyCache, TenantSettings
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import post_turns, turn
from tests.integration.test_long_term_memory import facts_settled, seed_turns

EMBEDDER = WordLlamaEmbedder()


async def store(stack: RunningStack, tenant: str, rows: list[dict[str, Any]]) -> list[uuid.UUID]:
    turns = [
        Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id="u1", project_id=None, session_id="s",
             role="user", content=r["content"], event_time=r.get("at", datetime.now(UTC)), tags=r.get("tags", ()))
        for r in rows
    ]  # fmt: skip
    vectors = r_vectors = await EMBEDDER.embed([t.content for t in turns])
    for i, r in enumerate(rows):
        if "vector_of" in r:
            r_vectors[i] = vectors[r["vector_of"]]
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(
            conn, [Episode(t, v, 5, importance=0.5) for t, v in zip(turns, r_vectors, strict=True)],
            model=EMBEDDER.model_name,
        )  # fmt: skip
    return [t.event_id for t in turns]


async def test_session_2_context_holds_the_preferences_and_the_rules_and_nothing_foreign(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, gateway_app: FastAPI,
    tenant: str,
) -> None:  # fmt: skip
    await post_turns(gateway, seed_turns(tenant, "u1", "s1"))
    # Another user of the tenant and another tenant say conflicting things.
    await post_turns(gateway, [turn(tenant, "x1", "I prefer light mode and Emacs.", user_id="u2")])
    other = f"{tenant}-other"
    async with client_for(gateway_app, stack.key(other)) as foreign:
        await post_turns(foreign, [turn(other, "s1", "I prefer light mode, CloudRetail uses Django.", user_id="u1")])
    await facts_settled(gateway, "u1", 8)

    response = await gateway.get(
        "/v1/context",
        params={"user_id": "u1", "session_id": "s2", "project_id": PROJECT, "budget": 1500,
                "query": "my coding preferences and the backend and timeout rules I chose for CloudRetail last session"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    context = response.json()
    prompt = context["prompt"]
    for needle in ("dark mode", "Python 3.11", "PostgreSQL", "FastAPI", "AlloyDB", "Valkey", "30 second",
                   "asia-southeast1"):  # fmt: skip
        assert needle in prompt, needle
    for foreign_needle in ("light mode", "Emacs", "Django"):
        assert foreign_needle not in prompt
    assert prompt.splitlines()[0] == f"# Memory for u1 (project {PROJECT}, session s2)"
    assert context["tokens"] <= 1500 and context["tokenizer"].startswith("llama2")
    assert context["decomposition"]["method"] == "rules" and len(context["decomposition"]["queries"]) == 3
    assert "s1" in context["decomposition"]["queries"][1], "'last session' is rewritten to its id"
    sections = {s["name"]: s for s in context["sections"]}
    assert len(context["facts"]) >= 8 and sum(s["tokens"] for s in sections.values()) <= context["tokens"]
    fact_lines = prompt.split("## Long-term facts\n", 1)[1].split("\n## ", 1)[0].splitlines()
    assert len(fact_lines) == sections["facts"]["items"] <= len(context["facts"])
    statements = [(line.split("]", 1)[0], line.split(": ", 1)[1]) for line in fact_lines]
    assert len(set(statements)) == len(statements), "one line per distinct statement"
    assert context["naive_tokens"] > 0


async def test_the_budget_is_respected_and_the_saving_reported(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    log = "\n".join(f"PASSED tests/test_orders.py::test_case_{i} [{i}%]" for i in range(300))
    turns = [turn(tenant, "s1", f"run the tests, round {i}") for i in range(10)]
    turns += [turn(tenant, "s1", log, role="tool", tool_name="pytest", tool_status="success") for _ in range(5)]
    await post_turns(gateway, turns)
    await facts_settled(gateway, "user-1", 0)

    # 200 tokens: less than the relevant memories and the newest turn need together (about 240),
    # whichever of them rank (polling notes accesses, and access statistics move the ranks).
    settled: list[dict[str, Any]] = []

    async def landed() -> bool:
        body = (await gateway.get("/v1/context", params={"user_id": "user-1", "session_id": "s1", "budget": 200,
                                                         "query": "test results"})).json()  # fmt: skip
        assert body["tokens"] <= 200, body  # the budget holds at every moment, settled or not
        # Settled: every turn stored (naive_tokens counts the episodes) and the session buffer
        # trimmed by the worker; until then the newest turns may still all be "recent".
        if body["naive_tokens"] > 5 * 2000 and sum(s["dropped"] for s in body["sections"]) > 0:
            settled.append(body)
        return bool(settled)

    await eventually(landed, timeout_s=60)
    context = settled[-1]
    assert context["tokens"] <= 200 and context["saved_tokens"] == context["naive_tokens"] - context["tokens"]
    assert context["saved_ratio"] > 0.9
    assert sum(s["dropped"] for s in context["sections"]) > 0


async def test_a_decayed_old_episode_ranks_below_a_fresh_equal_one(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    old, fresh = await store(stack, tenant, [
        {"content": "deploy the billing service with rsync", "at": datetime.now(UTC) - timedelta(days=120)},
        {"content": "deploy the billing service with rsync!", "at": datetime.now(UTC) - timedelta(days=1),
         "vector_of": 0},
    ])  # fmt: skip
    params = {"user_id": "u1", "q": "deploy the billing service with rsync", "mmr": "false", "boosts": "false"}
    hits = (await gateway.get("/v1/search", params=params)).json()["hits"]
    assert [h["id"] for h in hits] == [str(fresh), str(old)]
    floor, half_life = stack.settings.search_decay_floor, stack.settings.search_half_life_days
    assert hits[1]["parts"]["decay"] == pytest.approx(floor + (1 - floor) * 0.5 ** (120 / half_life), rel=1e-3)
    assert hits[1]["parts"]["decay"] < hits[0]["parts"]["decay"] <= 1.0
    undecayed = (await gateway.get("/v1/search", params={**params, "decay": "false"})).json()["hits"]
    assert {h["parts"]["decay"] for h in undecayed} == {1.0}


async def test_mmr_removes_a_near_duplicate(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> None:
    await store(stack, tenant, [
        {"content": "the staging database password rotates every Monday"},
        {"content": "the staging database password rotates every Monday.", "vector_of": 0},
        {"content": "staging deploys happen on Fridays"},
    ])  # fmt: skip
    q = {"user_id": "u1", "q": "staging database password rotation"}
    with_mmr = (await gateway.get("/v1/search", params=q)).json()["hits"]
    without = (await gateway.get("/v1/search", params={**q, "mmr": "false"})).json()["hits"]
    assert len(without) == 3 and len(with_mmr) == 2
    assert sum("rotates every Monday" in h["content"] for h in with_mmr) == 1


async def test_expired_and_superseded_facts_never_appear(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    start = datetime.now(UTC) - timedelta(days=2)
    await post_turns(gateway, [turn(tenant, "s1", "Project rule for CloudRetail: the backend is FastAPI.",
                                    project_id=PROJECT, event_time=start.isoformat()),
                               turn(tenant, "s1", "I prefer light mode.", event_time=start.isoformat())])  # fmt: skip
    await facts_settled(gateway, "user-1", 2)
    await post_turns(
        gateway, [turn(tenant, "s2", "We moved CloudRetail from FastAPI to Litestar.", project_id=PROJECT)]
    )

    async def superseded() -> bool:
        history = (await gateway.get("/v1/entities/backend framework/history", params={"user_id": "user-1"})).json()
        return len(history["facts"]) == 2

    await eventually(superseded, timeout_s=60)
    with stack.owner_db(tenant) as conn:
        conn.execute("UPDATE facts SET expires_at = now() - interval '1 second' WHERE entity = 'theme'")
    search = (await gateway.get("/v1/search", params={"user_id": "user-1", "q": "backend framework FastAPI light mode",
                                                      "memory_types": "fact", "project_id": PROJECT})).json()  # fmt: skip
    contents = " ".join(h["content"] for h in search["hits"])
    assert "Litestar" in contents and "the backend is FastAPI" not in contents and "light mode" not in contents
    context = (await gateway.get("/v1/context", params={"user_id": "user-1", "session_id": "s3", "project_id": PROJECT,
                                                        "query": "backend"})).json()  # fmt: skip
    facts_section = context["prompt"].split("## Long-term facts")[1].split("##")[0]
    assert "Litestar" in facts_section and "the backend is FastAPI" not in facts_section
    assert "light mode" not in facts_section


async def test_filters_and_score_parts(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> None:
    now = datetime.now(UTC)
    await store(stack, tenant, [
        {"content": "deploy failed: disk full on node 3", "tags": ("error",), "at": now - timedelta(days=10)},
        {"content": "we decided to deploy on Tuesdays", "tags": ("decision",), "at": now - timedelta(days=2)},
        {"content": "deploy notes from last year", "at": now - timedelta(days=400)},
    ])  # fmt: skip
    base = {"user_id": "u1", "q": "deploy"}
    errors = (await gateway.get("/v1/search", params={**base, "tags": "error"})).json()["hits"]
    assert [h["content"] for h in errors] == ["deploy failed: disk full on node 3"]
    recent = (await gateway.get("/v1/search", params={**base, "since": (now - timedelta(days=30)).isoformat()})).json()
    assert {h["content"] for h in recent["hits"]} == {"deploy failed: disk full on node 3",
                                                      "we decided to deploy on Tuesdays"}  # fmt: skip
    window = {"since": (now - timedelta(days=500)).isoformat(), "until": (now - timedelta(days=300)).isoformat()}
    old = (await gateway.get("/v1/search", params={**base, **window})).json()["hits"]
    assert [h["content"] for h in old] == ["deploy notes from last year"]
    assert (await gateway.get("/v1/search", params={**base, "memory_types": "fact"})).json()["hits"] == []
    hit = (await gateway.get("/v1/search", params=base)).json()["hits"][0]
    parts = hit["parts"]
    assert hit["score"] == parts["rrf"] * parts["decay"] * parts["boost"]
    assert parts["vector_rank"] or parts["text_rank"]
    bad = await gateway.get("/v1/search", params={**base, "memory_types": "gossip"})
    assert bad.status_code == 422 and "memory_types" in bad.json()["error"]["message"]
    naive = await gateway.get("/v1/search", params={**base, "since": "2026-01-01T00:00:00"})
    assert naive.status_code == 422


async def test_reads_update_access_statistics_off_the_request_path(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    [event] = await store(stack, tenant, [{"content": "the on-call rota is in the wiki"}])
    await gateway.get("/v1/search", params={"user_id": "u1", "q": "on-call rota"})
    await gateway_app.state.gateway.access.flush()
    with stack.db(tenant) as conn:
        row = conn.execute("SELECT access_count, last_accessed_at IS NOT NULL, user_id FROM memory_access"
                           " WHERE kind = 'episode' AND memory_id = %s", (event,)).fetchone()  # fmt: skip
    assert row == (1, True, "u1")


async def test_tenant_ranking_weights(gateway: httpx.AsyncClient, stack: RunningStack, tenant: str) -> None:
    await store(stack, tenant, [{"content": "alpha beta gamma"}])
    assert (await gateway.put("/v1/tenant/ranking", json={"vector_weight": 0.7, "text_weight": 0.3})).status_code == 200
    assert (await gateway.get("/v1/tenant/ranking")).json() == {"vector_weight": 0.7, "text_weight": 0.3,
                                                              "half_life_days": None}  # fmt: skip
    hit = (await gateway.get("/v1/search", params={"user_id": "u1", "q": "alpha beta", "boosts": "false"})).json()
    parts = hit["hits"][0]["parts"]
    expected = 0.7 / (60 + parts["vector_rank"]) + 0.3 / (60 + parts["text_rank"])
    assert abs(parts["rrf"] - expected) < 1e-9
    assert np.isfinite(hit["hits"][0]["score"])


async def test_a_burst_of_reads_bigger_than_the_pool_when_the_settings_expire_all_succeed(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    # Each read holds a pooled connection; the tenant's settings must then come through it,
    # not through a second one from the same (full) pool.
    await store(stack, tenant, [{"content": "deploy the billing service with rsync"}])
    gateway_app.state.gateway.policies.forget(tenant)
    responses = await asyncio.gather(
        *(gateway.get("/v1/search", params={"user_id": "u1", "q": f"billing deploy {i}"}) for i in range(40))
    )
    assert [r.status_code for r in responses] == [200] * 40


async def test_tenant_settings_load_through_the_held_connection(stack: RunningStack, tenant: str) -> None:
    pool = create_pool(stack.settings.require_database_url(), name="one", min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        cache = PolicyCache(pool)
        async with tenant_transaction(pool, tenant) as conn:  # the pool's only connection
            found = await asyncio.wait_for(cache.settings(tenant, conn), timeout=5)
        assert found == TenantSettings()
        assert await asyncio.wait_for(cache.settings(tenant), timeout=5) is found, "served from the cache"
    finally:
        await pool.close()


async def test_a_pool_connection_prepares_a_statement_the_first_time_it_runs_it(stack: RunningStack) -> None:
    """``PREPARE_THRESHOLD``: no statement runs unprepared (parsed, analysed, described) first."""
    pool = create_pool(stack.settings.require_database_url(), name="prepared", min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            await conn.execute("SELECT %s::int + 41 AS answer", (1,))
            cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
            prepared = [row[0] for row in await cur.fetchall()]
        assert any("+ 41 AS answer" in statement for statement in prepared), prepared
    finally:
        await pool.close()


async def test_a_pools_connections_after_the_first_read_no_catalog_for_pgvectors_types(
    stack: RunningStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first connection reads the types (``_Configure``); the next ones only register
    them, and read and write vectors as the first does."""
    fetched: list[str] = []
    fetch = TypeInfo.fetch

    async def counted(conn: Any, name: str) -> Any:
        fetched.append(name)
        return await fetch(conn, name)

    monkeypatch.setattr(pool_module.TypeInfo, "fetch", counted)
    pool = create_pool(stack.settings.require_database_url(), name="types", min_size=1, max_size=2)
    await pool.open(wait=True)
    try:
        assert sorted(fetched) == ["bit", "halfvec", "sparsevec", "vector"]
        async with pool.connection() as first, pool.connection() as second:  # the second is a new one
            assert first.info.backend_pid != second.info.backend_pid
            for conn in (first, second):
                cur = conn.cursor(binary=True)
                await cur.execute("SELECT %s::vector", (np.array([0.5, -2.0], dtype=np.float32),))
                row = await cur.fetchone()
                assert row is not None and isinstance(row[0], np.ndarray) and row[0].tolist() == [0.5, -2.0]
        assert len(fetched) == 4, "the second connection read no catalog"
    finally:
        await pool.close()
