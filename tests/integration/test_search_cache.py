"""Repeated searches answered from the gateway's short cache (agent frameworks ask the same
question on every model call), and never an answer that is out of date, or anyone else's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import ANY

import httpx
import psycopg
from pgvector.psycopg import register_vector_async

from agents_gateway.app import create_app
from agents_gateway.retrieval.decomposition import Method
from agents_gateway.retrieval.service import Toggles, send_early
from agents_gateway.state import GatewayState
from memstream.embedder.base import CachedEmbedder
from memstream.embedder.local import WordLlamaEmbedder
from memstream.settings import Settings
from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.event_log import append_events
from sinks.postgres.queries.retrieval import Filters, Terms, read_terms
from sinks.postgres.tenancy import tenant_transaction
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import count_rows, post_turns, turn

EMBEDDER = WordLlamaEmbedder()
QUESTION = "which database holds the billing ledger"


@asynccontextmanager
async def gateway_with_cache(stack: RunningStack, key: str) -> AsyncIterator[tuple[GatewayState, httpx.AsyncClient]]:
    """A gateway whose cached answers would live for an hour: only the memory's generation
    (and a memory's own expiry) can end them within a test."""
    app = create_app(Settings(**{**stack.settings.model_dump(), "search_cache_s": 3600}))
    async with app.router.lifespan_context(app), client_for(app, key) as client:
        client.app = app  # type: ignore[attr-defined]  # other keys' clients of the same gateway
        yield app.state.gateway, client


async def contents(client: httpx.AsyncClient, q: str = QUESTION, **params: Any) -> list[str]:
    response = await client.get("/v1/search", params={"user_id": "u1", "q": q, "k": 10, **params})
    assert response.status_code == 200, response.text
    return [h["content"] for h in response.json()["hits"]]


async def store(stack: RunningStack, tenant: str, content: str, *, agent: str = "a", shared: bool = False) -> uuid.UUID:
    """One episode of user u1, as the ingest worker writes it."""
    t = Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id=agent, user_id="u1", project_id=None, session_id="s", role="user",
             content=content, event_time=datetime.now(UTC), shared=shared)  # fmt: skip
    [vector] = await EMBEDDER.embed([content])
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(conn, [Episode(t, vector, 8)], model=EMBEDDER.model_name)
    return t.event_id


async def test_a_repeated_search_is_answered_from_the_cache(stack: RunningStack, tenant: str) -> None:
    await store(stack, tenant, "The billing ledger lives in Postgres")
    async with gateway_with_cache(stack, stack.key(tenant)) as (state, client):
        first = await contents(client)
        assert (state.searches.hits, state.searches.misses) == (0, 1)
        assert await contents(client) == first == ["The billing ledger lives in Postgres"]
        assert (state.searches.hits, state.searches.misses) == (1, 1)
        # Any difference in the question or its parameters is another search.
        await contents(client, k=5)
        await contents(client, q=QUESTION + "?")
        await contents(client, mmr="false")
        assert (state.searches.hits, state.searches.misses) == (1, 4)
        metrics = (await client.get("/metrics")).text
        assert 'memstream_cache_requests_total{cache="search",result="hit"} 1.0' in metrics


async def test_a_new_turn_is_in_the_next_search(stack: RunningStack, running_worker: WorkerHandle, tenant: str) -> None:
    """Through the whole pipeline: the turn goes to the broker, the worker writes it, and the
    first search after that finds it, although the answer before was cached for an hour."""
    key = stack.key(tenant)
    async with gateway_with_cache(stack, key) as (state, client):
        await post_turns(client, [turn(tenant, "s1", "The billing ledger lives in Postgres", user_id="u1")])
        await eventually(lambda: count_rows(stack, "episodes", tenant) == 1)
        served = state.searches.hits

        async def from_the_cache() -> bool:  # once the worker has written all it derives from the turn
            await contents(client)
            return state.searches.hits > served

        await eventually(from_the_cache, timeout_s=60, interval_s=0.5)
        cached = await contents(client)
        assert "The billing ledger moved to CockroachDB" not in cached
        await post_turns(client, [turn(tenant, "s1", "The billing ledger moved to CockroachDB", user_id="u1")])
        await eventually(lambda: count_rows(stack, "episodes", tenant) == 2)
        assert "The billing ledger moved to CockroachDB" in await contents(client)


async def test_forgetting_and_erasure_reach_a_cached_answer(stack: RunningStack, tenant: str) -> None:
    forgotten = await store(stack, tenant, "The billing ledger password hint is the cat's name")
    await store(stack, tenant, "The billing ledger lives in Postgres")
    async with gateway_with_cache(stack, stack.key(tenant)) as (state, client):
        assert len(await contents(client)) == 2
        assert len(await contents(client)) == 2 and state.searches.hits == 1
        response = await client.delete(f"/v1/memories/{forgotten}")
        assert response.status_code == 200, response.text
        assert len(state.searches) == 0, "the forgetting process holds no answer with the memory"
        assert await contents(client) == ["The billing ledger lives in Postgres"]
        assert await contents(client) == ["The billing ledger lives in Postgres"] and state.searches.hits == 2
        assert len(state.searches) == 1
        assert (await client.post("/v1/users/u1/erase")).status_code == 200
        assert len(state.searches) == 0, "the erasing process holds none of the user's answers"
        assert await contents(client) == []
        # An erased user keeps no generation (nor any trace of their id), and no answer of theirs is cached.
        with stack.db(tenant) as conn:
            assert conn.execute("SELECT count(*) FROM memory_generations").fetchone() == (0,)
        assert await contents(client) == [] and state.searches.hits == 2


async def test_a_memory_that_expires_leaves_the_cached_answer_then(stack: RunningStack, tenant: str) -> None:
    expiring = await store(stack, tenant, "The billing ledger's temporary access code is 4417")
    await store(stack, tenant, "The billing ledger lives in Postgres")
    with stack.db(tenant) as conn:
        conn.execute("UPDATE episodes SET expires_at = now() + interval '2 seconds' WHERE event_id = %s", (expiring,))
    async with gateway_with_cache(stack, stack.key(tenant)) as (state, client):
        assert "The billing ledger's temporary access code is 4417" in await contents(client)
        await asyncio.sleep(2.5)
        assert await contents(client) == ["The billing ledger lives in Postgres"]
        assert state.searches.hits == 0


async def test_a_cached_answer_is_never_another_agents_or_tenants(stack: RunningStack, tenant: str) -> None:
    await store(stack, tenant, "Agent x's private note: the billing ledger key is in vault 7", agent="x")
    await store(stack, tenant, "Shared: the billing ledger lives in Postgres", agent="x", shared=True)
    other = f"t-{uuid.uuid4().hex[:10]}"
    await store(stack, other, "The other tenant's billing ledger lives in MySQL")
    private = "Agent x's private note: the billing ledger key is in vault 7"
    async with gateway_with_cache(stack, stack.key(tenant, agent="x", scopes=("read",))) as (state, as_x):
        keys = {
            "y": stack.key(tenant, agent="y", scopes=("read",)),
            "tenant": stack.key(tenant, scopes=("read",)),
            "other": stack.key(other, scopes=("read",)),
        }
        assert private in await contents(as_x)
        assert private in await contents(as_x)  # now cached for x
        assert state.searches.hits == 1
        app = as_x.app  # type: ignore[attr-defined]
        for name, key in keys.items():
            async with client_for(app, key) as client:
                seen = await contents(client)
                again = await contents(client)
            assert seen == again
            if name == "y":
                assert seen == ["Shared: the billing ledger lives in Postgres"]
            elif name == "tenant":
                assert private in seen and len(seen) == 2
            else:
                assert seen == ["The other tenant's billing ledger lives in MySQL"]
        # tenant_id names the key's own tenant or nothing: another tenant's is refused, not cached.
        async with client_for(app, keys["other"]) as client:
            refused = await client.get("/v1/search", params={"user_id": "u1", "q": QUESTION, "tenant_id": tenant})
        assert refused.status_code == 403
        assert state.searches.hits == 4  # each of the three keys' repeat, and x's own


async def test_every_table_a_read_returns_moves_the_generation(stack: RunningStack, tenant: str) -> None:
    """The triggers of migration 0014 are on every table whose rows a search returns."""
    with stack.owner_db() as conn:
        rows = conn.execute(
            "SELECT c.relname, array_agg(t.tgname ORDER BY t.tgname) FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname LIKE '%%_generation_%%' GROUP BY 1 ORDER BY 1"
        ).fetchall()
    events = {table: sorted(name.rsplit("_", 1)[1] for name in names) for table, names in rows}  # type: ignore[union-attr]
    assert events == {  # not the event log: test_the_previous_session_is_part_of_the_key
        "episodes": ["delete", "insert", "truncate", "update"],
        "facts": ["delete", "insert", "truncate", "update"],
        "skill_runs": ["delete", "insert", "truncate", "update"],
        "skills": ["delete", "insert", "truncate", "update"],
    }

    def generation() -> int:
        with stack.db(tenant) as conn:
            row = conn.execute("SELECT generation FROM memory_generations WHERE user_id = 'u1'").fetchone()
        return int(row[0]) if row else 0  # type: ignore[call-overload]

    seen = [generation()]
    event = await store(stack, tenant, "The billing ledger lives in Postgres")
    seen.append(generation())
    with stack.db(tenant) as conn:
        conn.execute("UPDATE episodes SET importance = 0.9 WHERE event_id = %s", (event,))
    seen.append(generation())
    with stack.db(tenant) as conn:
        conn.execute("UPDATE episodes SET importance = 0.9 WHERE false")  # no row: nothing moves
    seen.append(generation())
    with stack.db(tenant) as conn:
        conn.execute("DELETE FROM episodes WHERE event_id = %s", (event,))
    seen.append(generation())
    assert seen[0] == 0 and seen[1] < seen[2] == seen[3] < seen[4], seen
    with stack.db(f"t-{uuid.uuid4().hex[:10]}") as conn:  # another tenant sees none of it
        assert conn.execute("SELECT count(*) FROM memory_generations").fetchone() == (0,)


async def test_the_previous_session_is_part_of_the_key(stack: RunningStack, tenant: str) -> None:
    """ "Last session" comes from the event log, which moves no generation (an append to it is
    the hottest write there is): the gateway looks the previous session up before its cache."""
    await store(stack, tenant, "The billing ledger lives in Postgres")

    async def log(session: str, minutes_ago: int) -> None:
        turn = Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id="u1", project_id=None,
                    session_id=session, role="user", content="hello",
                    event_time=datetime.now(UTC) - timedelta(minutes=minutes_ago))  # fmt: skip
        async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
            await append_events(conn, [turn])

    await log("s1", 60)
    question = {"q": "what did we decide last session about the billing ledger", "session_id": "s9"}
    async with gateway_with_cache(stack, stack.key(tenant)) as (state, client):

        async def asked() -> list[str]:
            response = await client.get("/v1/search", params={"user_id": "u1", "k": 5, **question})
            assert response.status_code == 200, response.text
            return list(response.json()["decomposition"]["queries"])

        first = await asked()
        assert await asked() == first and state.searches.hits == 1
        assert any("s1" in q for q in first), first
        generation = state.searches.hits
        await log("s5", 1)  # a newer session: only the event log changed
        moved = await asked()
        assert state.searches.hits == generation, "answered from the cache with the old previous session"
        assert any("s5" in q for q in moved) and not any("s1" in q for q in moved), moved


async def test_a_search_reads_its_terms_in_its_first_round_trip_unless_it_is_likely_a_repeat(
    stack: RunningStack, tenant: str
) -> None:
    """``send_early``: the sub-queries' terms go with the user's totals, except when they are
    not known without the database or a model, or when the same search has an answer in the
    cache (likely answered from it, and its terms would go unread)."""
    await store(stack, tenant, "The billing ledger lives in Postgres")
    async with gateway_with_cache(stack, stack.key(tenant)) as (state, client):

        async def early(query: str, method: Method = "off", session_id: str | None = None) -> list[Terms] | None:
            scope = Filters(tenant_id=tenant, user_id="u1", session_id=session_id)
            async with tenant_transaction(state.pool, tenant, pipeline=True) as conn:
                sent = await send_early(
                    state, conn, scope, query, method=method, toggles=Toggles(), agent_id=None, now=datetime.now(UTC)
                )
                return None if sent is None else [await read_terms(cur) for cur in sent.sent]

        assert await early(QUESTION) == [Terms({"bill": 1, "databas": 0, "hold": 0, "ledger": 1}, 1, ANY, 1)]
        two = await early("which database holds the billing ledger; who set up the replicas", method="rules")
        assert two is not None and len(two) == 2
        assert await early(QUESTION, method="llm") is None, "the model's sub-queries are not known yet"
        assert await early("what did we decide last session", session_id="s") is None, "needs the event log"
        await contents(client)
        assert await early(QUESTION) is None, "answered a moment ago: likely a repeat"
        await store(stack, tenant, "The billing ledger moved to CockroachDB")
        assert len(await contents(client)) == 2, "a likely repeat that is not one is searched all the same"


async def test_a_question_one_tenant_asked_is_no_cache_hit_for_another(stack: RunningStack, tenant: str) -> None:
    """A hit is faster than a miss: the query embedding cache, keyed by text alone, made another
    tenant's search for the same words faster (issue 45: 0.2-0.4 ms). Neither its entries nor
    the tokenizer's remembered counts are shared by tenants."""
    other = f"t-{uuid.uuid4().hex[:10]}"
    await store(stack, tenant, "The billing ledger lives in Postgres")
    await store(stack, other, "The billing ledger lives in MySQL")
    app = create_app(Settings(**{**stack.settings.model_dump(), "search_cache_s": 0}))  # every search embeds
    question = f"where does the ledger of {uuid.uuid4().hex[:8]} live"
    async with app.router.lifespan_context(app), client_for(app, stack.key(tenant)) as mine:
        async with client_for(app, stack.key(other)) as theirs:
            state: GatewayState = app.state.gateway
            embedding = state.embedder
            assert isinstance(embedding, CachedEmbedder)

            async def counted(client: httpx.AsyncClient) -> tuple[int, int]:
                hits, misses = embedding.hits, embedding.misses
                await contents(client, question)
                return embedding.hits - hits, embedding.misses - misses

            first = await counted(mine)
            assert first[0] == 0 and first[1] >= 1
            assert await counted(theirs) == first, "another tenant's question is no hit"
            assert await counted(mine) == (first[1], 0), "the tenant's own repeat is"
            for client in (mine, theirs):
                answer = await client.get("/v1/context", params={"user_id": "u1", "session_id": "s", "query": question})
                assert answer.status_code == 200, answer.text
            assert {owner for owner, _ in state.tokens._counts} == {tenant, other}, "counts are the tenants' own"
