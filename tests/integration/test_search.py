"""Hybrid search: RRF over vector and full text, scoped to tenant, user and project."""

from __future__ import annotations

import asyncio
import itertools
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from pgvector.psycopg import register_vector_async

from agents_gateway.app import create_app
from agents_gateway.retrieval.ranking import RankingOptions
from agents_gateway.retrieval.search import SearchSpec, hybrid_search
from memstream.embedder.local import WordLlamaEmbedder
from memstream.settings import Settings, VectorIndex
from schemas.turns import Turn
from sinks.errors import SchemaNotReadyError
from sinks.postgres import tenancy
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.migrate import check_text_search_config
from sinks.postgres.pool import create_pool
from sinks.postgres.queries import retrieval
from sinks.postgres.queries.retrieval import Filters, text_candidates, vector_candidates
from sinks.postgres.tenancy import idle_tenant_transaction, tenant_transaction
from sinks.postgres.vector_index import ensure_vector_index, index_name
from tests.fixtures.stack import RunningStack, client_for

EMBEDDER = WordLlamaEmbedder()


async def store(stack: RunningStack, tenant: str, rows: list[dict[str, Any]]) -> list[uuid.UUID]:
    turns = [
        Turn(
            event_id=uuid.uuid4(),
            tenant_id=tenant,
            agent_id=r.get("agent", "a"),
            user_id=r.get("user", "u1"),
            project_id=r.get("project"),
            session_id="s",
            role="user",
            content=r["content"],
            event_time=datetime.now(UTC) - timedelta(minutes=len(rows) - i),
        )
        for i, r in enumerate(rows)
    ]
    vectors = await EMBEDDER.embed([t.content for t in turns])
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(
            conn,
            [Episode(t, v, 5) for t, v in zip(turns, vectors, strict=True)],
            model=EMBEDDER.model_name,
        )
    return [t.event_id for t in turns]


async def vector_index(stack: RunningStack, strategy: VectorIndex, *, min_episodes: int) -> bool:
    """``ensure_vector_index`` off the event loop: a DROP or CREATE INDEX CONCURRENTLY waits for
    every open transaction, and the in-process gateway's (access statistics) run on this loop."""
    return await asyncio.to_thread(
        ensure_vector_index, stack.settings.require_owner_database_url(), strategy=strategy,
        model=EMBEDDER.model_name, dim=EMBEDDER.dim, min_episodes=min_episodes,
    )  # fmt: skip


async def search(gateway: httpx.AsyncClient, tenant: str, q: str, **params: Any) -> list[dict[str, Any]]:
    response = await gateway.get("/v1/search", params={"tenant_id": tenant, "user_id": "u1", "q": q, **params})
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


async def test_project_scope_includes_global_memory_but_not_other_projects(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await store(
        stack,
        tenant,
        [
            {"content": "CloudRetail uses FastAPI on AlloyDB", "project": "CloudRetail"},
            {"content": "Payments uses Django on MySQL", "project": "Payments"},
            {"content": "I prefer dark mode everywhere"},
        ],
    )
    scoped = {
        h["content"]
        for h in await search(gateway, tenant, "backend framework and preferences", project_id="CloudRetail")
    }
    assert scoped == {"CloudRetail uses FastAPI on AlloyDB", "I prefer dark mode everywhere"}
    everything = {h["content"] for h in await search(gateway, tenant, "backend framework and preferences")}
    assert len(everything) == 3


async def test_a_project_filter_finds_the_same_episodes_by_text_narrow_or_broad(
    stack: RunningStack, tenant: str
) -> None:
    """A project holding a large share of the user's episodes is checked on the rows the text
    index finds, a small one may go through ``episodes_owner`` (``BROAD_PROJECT_SHARE``):
    either way the text list holds the project's episodes and those of no project, never
    another project's. A query that may read many rows (``many_rows``: here every word is in
    every episode) has the index find them by a lexeme naming the project (migration 0016):
    a project whose id begins with another's, in characters a tsquery gives meaning to, is a
    project of its own."""
    await store(
        stack,
        tenant,
        [
            {"content": "Ledger copy replicas run in Frankfurt", "project": "Small"},
            {"content": "Ledger copy backups are hourly"},
            *({"content": f"Ledger copy shard {i} is in Oregon", "project": "Large"} for i in range(9)),
            {"content": "Ledger copy archive sits in Dublin", "project": "Small/eu-1:a+b@c"},
        ],
    )
    expected = {
        "Small": {"Ledger copy replicas run in Frankfurt", "Ledger copy backups are hourly"},
        "Large": {"Ledger copy backups are hourly", *(f"Ledger copy shard {i} is in Oregon" for i in range(9))},
        "Small/eu-1:a+b@c": {"Ledger copy archive sits in Dublin", "Ledger copy backups are hourly"},
    }
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
        for project, broad, kept in (("Small", False, 2), ("Large", True, 10), ("Small/eu-1:a+b@c", False, 2)):
            scope = Filters(tenant_id=tenant, user_id="u1", project_id=project, memory_types=("episodic",))
            for text, by_lexeme in (("where are the ledger replicas", False), ("ledger copy", True)):
                terms = await retrieval.read_terms(await retrieval.send_terms(conn, scope, text))
                assert (terms.n_docs, terms.in_project) == (12, kept)
                query = retrieval._episode_text(scope.params(), terms)
                assert query is not None and query["broad_project"] is broad
                assert (f": project {project}" in query["filter"]) is by_lexeme, query["filter"]
            for text in ("ledger", "ledger copy"):
                found = {c.content for c in await text_candidates(conn, scope, text, limit=20)}
                assert found == expected[project], (project, text)


async def test_other_users_and_tenants_are_invisible(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await store(stack, tenant, [{"content": "my secret plan is tea", "user": "u2"}])
    await store(stack, tenant + "x", [{"content": "my secret plan is coffee"}])
    assert await search(gateway, tenant, "secret plan") == []


async def test_expired_rows_are_never_served(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> None:
    ids = await store(
        stack,
        tenant,
        [{"content": "temporary access code rotation"}, {"content": "permanent rule"}],
    )
    with stack.owner_db(tenant) as conn:
        conn.execute(
            "UPDATE episodes SET expires_at = now() - interval '1 second' WHERE event_id = %s",
            (ids[0],),
        )
    contents = [h["content"] for h in await search(gateway, tenant, "temporary access code rotation")]
    assert contents == ["permanent rule"]


async def test_text_and_vector_ranks_are_reported_and_fused(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await store(
        stack,
        tenant,
        [
            {"content": "deploy with rsync, not scp"},
            {"content": "the weather is nice today"},
            {"content": "we moved the deployment tooling to rsync last week"},
        ],
    )
    hits = await search(gateway, tenant, "rsync", k=3)
    assert {h["content"] for h in hits[:2]} == {
        "deploy with rsync, not scp",
        "we moved the deployment tooling to rsync last week",
    }
    assert all(h["parts"]["text_rank"] is not None for h in hits[:2])
    assert hits[-1]["parts"]["text_rank"] is None and hits[-1]["parts"]["vector_rank"] is not None
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]


#: A small memory with paraphrases (MMR's penalty reorders them) and several topics.
ORDER_MEMORY = [
    "We deploy the shop with rsync, never scp.",
    "Deployments of the shop go out with rsync, not scp.",
    "The shop is deployed by rsync rather than scp.",
    "Staging deploys use rsync too.",
    "The shop's database is PostgreSQL 16.",
    "Our database for the shop runs PostgreSQL version 16.",
    "The cache in front of the database is Valkey.",
    "I prefer dark mode in every editor.",
    "Dark mode is what I like in editors.",
    "My editor is VS Code.",
    "The deploy failed yesterday because the disk was full.",
    "Yesterday's deployment broke: the disk filled up.",
    "Lunch was ramen by the river.",
    "The tool timeout is 30 seconds for every project.",
    "Timeouts for tools are 30 s everywhere.",
    "Backups run hourly to a bucket in Frankfurt.",
    "The backup bucket sits in Frankfurt and fills every hour.",
    "Alice reviews every database migration.",
    "Migrations need Alice's review first.",
    "We picked FastAPI for the shop's backend.",
]
ORDER_QUERIES = [
    "how do we deploy the shop?",
    "which database and cache does the shop use",
    "editor preferences",
    "what went wrong with the deploy",
    "backups and migrations",
    "timeouts; backend framework; deploy tool",
]


async def test_hits_come_in_the_order_of_the_score_they_show(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """Issue 46: a response listed scores 0.0252, 0.0215, 0.0240: the order was MMR's and the
    score the relevance before it. Now every hit shows the score it was ranked by, so scores
    never rise down the list, over several queries, with and without MMR and decomposition."""
    await store(stack, tenant, [{"content": c} for c in ORDER_MEMORY])
    reordered = 0
    for q in ORDER_QUERIES:
        for toggles in ({}, {"mmr": "false"}, {"decompose": "rules"}, {"decay": "false", "boosts": "false"}):
            hits = await search(gateway, tenant, q, k=12, **toggles)
            assert hits, (q, toggles)
            scores = [h["score"] for h in hits]
            assert scores == sorted(scores, reverse=True), (q, toggles, scores)
            relevance = [h["parts"]["relevance"] for h in hits]
            if toggles.get("mmr") == "false":
                assert scores == relevance
            else:
                assert scores[0] == relevance[0] and all(s <= r + 1e-12 for s, r in zip(scores, relevance, strict=True))
                reordered += relevance != sorted(relevance, reverse=True)
    assert reordered, "some search had MMR reorder its hits (else this test shows nothing)"


async def test_hostile_query_text_is_just_text(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> None:
    await store(stack, tenant, [{"content": "ordinary memory"}])
    for q in ["'; DROP TABLE episodes; --", "a & b | !c <-> (d", "%s %(tenant_id)s", "\\x00", "o'neil's back\\'slash"]:
        response = await gateway.get("/v1/search", params={"tenant_id": tenant, "user_id": "u1", "q": q})
        assert response.status_code == 200
    with stack.db(tenant) as conn:
        assert conn.execute("SELECT count(*) FROM episodes WHERE tenant_id = %s", (tenant,)).fetchone() == (1,)


async def test_hnsw_strategy_finds_what_exact_search_finds(stack: RunningStack, tenant: str) -> None:
    await store(
        stack,
        tenant,
        [
            {"content": f"note {i} about {topic}"}
            for i, topic in enumerate(["rsync", "dark mode", "valkey", "alloydb", "fastapi", "timeouts"])
        ],
    )
    query = (await EMBEDDER.embed(["which cache do we use"]))[0]
    scope = Filters(tenant_id=tenant, user_id="u1", memory_types=("episodic",))
    await vector_index(stack, "hnsw", min_episodes=0)
    try:
        async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
            await register_vector_async(conn)
            await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
            exact = await vector_candidates(conn, scope, query, model=EMBEDDER.model_name, limit=6, scan="exact")
            async with conn.transaction():
                hnsw = await vector_candidates(conn, scope, query, model=EMBEDDER.model_name, limit=6, scan="hnsw")
                plan = await conn.execute("EXPLAIN SELECT 1 FROM episodes ORDER BY created_at")
                assert "Sort" in "".join(r[0] for r in await plan.fetchall()), "the planner's settings are back"
            settings = "SELECT current_setting('enable_seqscan'), current_setting('enable_bitmapscan'), " \
                "current_setting('enable_sort')"  # fmt: skip
            for text, early in itertools.product(("which valkey note", "which of them is it"), (False, True)):
                async with conn.transaction():  # the second text: stopwords only
                    terms = await retrieval.read_terms(await retrieval.send_terms(conn, scope, text)) if early else None
                    ((near, matched),) = await retrieval.candidate_lists_many(
                        conn, scope, [retrieval.Probe(query, text, terms)], model=EMBEDDER.model_name, limit=6,
                        scan="hnsw",
                    )  # fmt: skip
                    assert [c.id for c in near] == [r.id for r in exact]
                    assert (matched == []) is (text == "which of them is it")
                    back = await (await conn.execute(settings)).fetchone()
                    assert back == ("on", "on", "on"), f"after {text!r} (terms read first: {early}), they are back on"
        assert [r.id for r in hnsw] == [r.id for r in exact]
        with stack.owner_db() as conn:
            names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'episodes'")}
        assert index_name(EMBEDDER.model_name) in names
        await vector_index(stack, "exact", min_episodes=0)
        with stack.owner_db() as conn:
            names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'episodes'")}
        assert index_name(EMBEDDER.model_name) not in names
    finally:  # as the stack was started
        await vector_index(stack, stack.settings.vector_index, min_episodes=stack.settings.hnsw_min_episodes)


def numbered(statement: str) -> tuple[str, list[str]]:
    """A psycopg statement (``%(name)s``) with Postgres's ``$n`` placeholders, and the names in order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, statement).replace("%%", "%"), names


async def test_a_generic_plan_of_the_hnsw_list_walks_the_index(stack: RunningStack, tenant: str) -> None:
    """Postgres may settle on a generic plan for a prepared statement after its fifth run. The
    HNSW index is partial (one model's rows): a generic plan may use it only if the statement
    itself names the model. With the model as a parameter, the generic plan read every row of
    the user and sorted them (2 s a search at 100,000 episodes)."""
    await store(stack, tenant, [{"content": f"note {i} about the valkey cache"} for i in range(6)])
    query = (await EMBEDDER.embed(["which cache do we use"]))[0]
    scope = Filters(tenant_id=tenant, user_id="u1", memory_types=("episodic",))
    await vector_index(stack, "hnsw", min_episodes=0)
    try:
        statement, names = numbered(retrieval._vector_sql("hnsw", EMBEDDER.dim, EMBEDDER.model_name))
        assert "model" not in names, "the model is part of the statement"
        async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
            await register_vector_async(conn)
            await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
            async with conn.transaction():
                await conn.execute(retrieval._HNSW_ON, {"ef": "100"})
                plan = await (await conn.execute(f"EXPLAIN (GENERIC_PLAN) {statement}")).fetchall()
                assert index_name(EMBEDDER.model_name) in "\n".join(r[0] for r in plan), plan
            exact = await vector_candidates(conn, scope, query, model=EMBEDDER.model_name, limit=6, scan="exact")
            conn.prepare_threshold = 0  # prepared at its first run, as a busy connection has them
            for _ in range(3):  # the list runs as its generic plan, planned once, and finds the same rows
                async with conn.transaction():
                    hnsw = await vector_candidates(conn, scope, query, model=EMBEDDER.model_name, limit=6, scan="hnsw")
                assert [c.id for c in hnsw] == [c.id for c in exact] and len(exact) == 6
            plans = await (await conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                (f"%embedding::vector({EMBEDDER.dim}) <=>%",),
            )).fetchall()  # fmt: skip
        assert plans == [(3, 0)], plans
    finally:  # as the stack was started
        await vector_index(stack, stack.settings.vector_index, min_episodes=stack.settings.hnsw_min_episodes)


async def test_the_text_query_reaches_the_users_rows_through_their_lexemes_only(
    stack: RunningStack, tenant: str
) -> None:
    """The episodes' text query finds its rows through the owner's lexemes (``owner_tsv``), and
    checks the user on those rows only (``_OF_USER_UNINDEXED``): the planner intersected the
    lexemes' bitmap with one of every row of the user from ``episodes_owner``, a third of the
    query at a thousand episodes. Index scans only, so that a small table's sequential scan
    does not hide which index the planner would take (for this small tenant, its rows by the
    tenant alone); the same hits either way."""
    others = [{"content": f"note {i} about the weather", "user": "u2" if i % 2 else "u1"} for i in range(60)]
    rare = await store(stack, tenant, [*others, {"content": "the valkey cache moved to another zone"}])
    scope = Filters(tenant_id=tenant, user_id="u1", memory_types=("episodic",))
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
        terms = await retrieval.read_terms(await retrieval.send_terms(conn, scope, "where did the valkey cache go"))
        query = retrieval._episode_text({**scope.params(), "limit": 10, "config": "english"}, terms)
        assert query is not None
        statement = retrieval._episode_text_sql(query.pop("lexemes"), query.pop("broad_project"))
        async with conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off")
            explain = psycopg.AsyncClientCursor(conn)
            await explain.execute(f"EXPLAIN {statement}", query)
            plan = [str(r[0]) for r in await explain.fetchall()]
            found = psycopg.AsyncClientCursor(conn)
            await found.execute(statement, query)
            hits = [r[0] for r in await found.fetchall()]
    assert not any("Index Cond" in line and "user_id" in line for line in plan), plan
    assert hits == [rare[-1]]


async def test_a_rare_word_outweighs_a_name_on_every_turn(stack: RunningStack, tenant: str) -> None:
    chatter = [f"Caroline: Caroline here, just chatting about day {i}, Caroline again." for i in range(60)]
    poetry, *_ = await store(stack, tenant, [
        {"content": "Melanie: I went to a poetry reading about grief and healing."},
        {"content": "Caroline: the art show was lovely."},
        *({"content": c} for c in chatter),
    ])  # fmt: skip
    scope = Filters(tenant_id=tenant, user_id="u1", memory_types=("episodic",))
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
        question = "What was the poetry reading that Caroline attended about?"
        hits = await text_candidates(conn, scope, question, limit=10)
        assert [h.id for h in hits] == [poetry], "a name on every turn selects nothing by itself"
        hits = await text_candidates(conn, scope, "Caroline", limit=3)
        assert len(hits) == 3, "asked about the name alone, the name selects"


async def test_a_tenant_searches_in_its_own_language(
    stack: RunningStack, gateway: httpx.AsyncClient, gateway_app: FastAPI, tenant: str
) -> None:
    other = f"{tenant}-en"
    await store(stack, other, [{"content": "Die Kinder spielten in den Gärten."}])
    await store(stack, tenant, [{"content": "Die Kinder spielten in den Gärten."}])

    async def text_hits(q: str) -> list[dict[str, Any]]:
        return [h for h in await search(gateway, tenant, q, k=5) if h["parts"]["text_rank"] is not None]

    assert await text_hits("Garten") == [], "english does not know that Gärten is the plural of Garten"
    before = (await gateway.get("/v1/tenant/text-search")).json()
    assert before["config"] is None and before["effective"] == "english" and "german" in before["available"]

    response = await gateway.put("/v1/tenant/text-search", json={"config": "german"})
    assert response.status_code == 200, response.text
    assert response.json()["effective"] == "german" and response.json()["reindexed"] == {"episodes": 1, "facts": 0}
    assert [h["content"] for h in await text_hits("Garten")] == ["Die Kinder spielten in den Gärten."]

    await store(stack, tenant, [{"content": "Wir bauen ein Haus mit drei Häusern."}])
    with stack.db(tenant) as conn:
        configs = conn.execute("SELECT DISTINCT text_config::text FROM episodes WHERE tenant_id = %s", (tenant,))
        assert [r[0] for r in configs] == ["german"], "new rows follow the tenant's language"
    with stack.db(other) as conn:
        configs = conn.execute("SELECT DISTINCT text_config::text FROM episodes WHERE tenant_id = %s", (other,))
        assert [r[0] for r in configs] == ["english"], "another tenant is untouched"

    refused = await gateway.put("/v1/tenant/text-search", json={"config": "klingon"})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "unknown_text_search_config"
    assert (await gateway.get("/v1/tenant/text-search")).json()["config"] == "german"

    reset = (await gateway.put("/v1/tenant/text-search", json={"config": None})).json()
    assert reset["effective"] == "english" and reset["reindexed"]["episodes"] == 2


async def test_an_unknown_deployment_language_fails_loudly(stack: RunningStack) -> None:
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await check_text_search_config(conn, "english")
        await check_text_search_config(conn, "pg_catalog.german")
        with pytest.raises(SchemaNotReadyError, match=r"klingon.*it has: .*english"):
            await check_text_search_config(conn, "klingon")


async def test_auto_switches_a_large_user_to_hnsw_with_the_same_hits(stack: RunningStack, tenant: str) -> None:
    """Under ``vector_index=auto`` a user past ``hnsw_min_episodes`` is searched through the
    index once it is built, a smaller one exactly; on a small corpus both find the same."""
    topics = ["rsync deploys", "dark mode", "valkey caching", "alloydb", "fastapi routes", "timeouts", "pytest"]
    await store(stack, tenant, [{"content": f"note {i} about {t}"} for i, t in enumerate(topics)])
    await store(stack, tenant, [{"content": "a note about caching", "user": "small"}])

    async def scans(min_episodes: int, user: str = "u1") -> tuple[str, list[str]]:
        app = create_app(Settings(**{**stack.settings.model_dump(), "hnsw_min_episodes": min_episodes}))
        async with app.router.lifespan_context(app), client_for(app, stack.key(tenant)) as client:
            response = await client.get("/v1/search", params={"user_id": user, "q": "which cache do we use", "k": 5})
        assert response.status_code == 200, response.text
        return response.json()["vector_scan"], [h["id"] for h in response.json()["hits"]]

    await vector_index(stack, "exact", min_episodes=0)
    assert not await vector_index(stack, "auto", min_episodes=10**9), "no user needs it: not built"  # fmt: skip
    exact_scan, exact_hits = await scans(10**9)
    try:
        assert await vector_index(stack, "auto", min_episodes=5)
        hnsw_scan, hnsw_hits = await scans(5)
        assert (exact_scan, hnsw_scan) == ("exact", "hnsw")
        assert hnsw_hits == exact_hits
        assert (await scans(5, user="small"))[0] == "exact", "a user below the line is scanned exactly"
    finally:  # as the stack was started
        await vector_index(stack, "exact", min_episodes=0)
        await vector_index(stack, stack.settings.vector_index, min_episodes=stack.settings.hnsw_min_episodes)


async def test_when_every_word_is_common_the_other_words_still_rank_and_the_scan_is_capped(
    stack: RunningStack, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 turns in which every query word is common: the candidates hold the two rarest
    ("zebra", "quokka"); "wombat", held by some of them, still ranks them first (only the
    words every candidate holds are left out of the per-row score), and no more than
    ``ALL_OF_ROWS`` candidates are scored."""
    with_wombat = await store(stack, tenant, [
        *({"content": "zebra quokka wombat axolotl"} for _ in range(4)),  # older
        *({"content": "zebra quokka axolotl"} for _ in range(4)),  # newer, no wombat
        *({"content": "quokka wombat axolotl"} for _ in range(2)),
        *({"content": "wombat axolotl"} for _ in range(16)),
        *({"content": "axolotl plain filler"} for _ in range(14)),
    ])  # fmt: skip
    scope = Filters(tenant_id=tenant, user_id="u1", memory_types=("episodic",))
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))
        hits = await text_candidates(conn, scope, "zebra quokka wombat", limit=20)
        assert len(hits) == 8, "the candidates are the turns holding both of the two rarest words"
        assert {h.id for h in hits[:4]} == set(with_wombat[:4]), "a word some candidates hold still counts"
        # One hit: only the best by score is read whole; the newest four lack "wombat".
        (best,) = await text_candidates(conn, scope, "zebra quokka wombat", limit=1)
        assert best.id in with_wombat[:4]
        monkeypatch.setattr(retrieval, "ALL_OF_ROWS", 3)
        assert len(await text_candidates(conn, scope, "zebra quokka wombat", limit=20)) == 3


#: Two topics, two turns each: deploys and themes.
DEPLOYS_AND_THEMES = [
    {"content": "We deploy the billing service with rsync over SSH."},
    {"content": "The dashboard uses a dark theme for the night shift."},
    {"content": "Deploys go out on Tuesdays after the standup."},
    {"content": "Alice likes dark mode in every editor."},
]


async def test_sub_queries_side_by_side_find_what_one_after_another_finds(stack: RunningStack, tenant: str) -> None:
    await store(stack, tenant, [*DEPLOYS_AND_THEMES, {"content": "The weather was nice on the hike."}])
    spec = SearchSpec(
        filters=Filters(tenant_id=tenant, user_id="u1"), queries=["how do we deploy", "which theme is used"], k=4,
        candidates=50, vector_weight=1.0, text_weight=1.0, rrf_k=60, ranking=RankingOptions(), scan="exact",
    )  # fmt: skip
    now = datetime.now(UTC)
    pool = create_pool(stack.settings.require_database_url(), name="test-lanes", max_size=3)
    await pool.open()
    try:
        lent: list[bool] = []

        @asynccontextmanager
        async def spare() -> AsyncIterator[psycopg.AsyncConnection[Any] | None]:
            async with idle_tenant_transaction(pool, tenant) as conn:
                lent.append(conn is not None)
                yield conn

        async with tenant_transaction(pool, tenant) as conn:
            alone = await hybrid_search(conn, spec, EMBEDDER, now=now)
            beside = await hybrid_search(conn, spec, EMBEDDER, now=now, spare=spare)
        assert lent == [True], "the second sub-query had a connection of its own"
        assert [(h.candidate.id, h.sub_queries) for h in beside] == [(h.candidate.id, h.sub_queries) for h in alone]
        assert [h.scored.score for h in beside] == pytest.approx([h.scored.score for h in alone])
        assert {0, 1} <= {i for h in alone for i in h.sub_queries}
    finally:
        await pool.close()


async def test_many_probes_in_one_pipeline_find_what_each_finds_alone(stack: RunningStack, tenant: str) -> None:
    await store(stack, tenant, DEPLOYS_AND_THEMES)
    texts = ["how do we deploy", "which theme is used", "which of them is it", "rsync"]  # the third: stopwords only
    vectors = await EMBEDDER.embed(texts)
    probes = [retrieval.Probe(v, t) for v, t in zip(vectors, texts, strict=True)]
    probes[3] = retrieval.Probe(None, "rsync")  # a list may be skipped in one probe only
    scope = Filters(tenant_id=tenant, user_id="u1")
    pool = create_pool(stack.settings.require_database_url(), name="test-probes", max_size=1)
    await pool.open()

    def ids(found: list[tuple[list[retrieval.Candidate], list[retrieval.Candidate]]]) -> list[Any]:
        return [([c.id for c in near], [c.id for c in matched]) for near, matched in found]

    try:
        async with tenant_transaction(pool, tenant, pipeline=True) as conn:
            together = await retrieval.candidate_lists_many(
                conn, scope, probes, model=EMBEDDER.model_name, limit=3, scan="exact"
            )
            alone = [
                await retrieval.candidate_lists(
                    conn, scope, embedding=p.embedding, text=p.text, model=EMBEDDER.model_name, limit=3, scan="exact"
                )
                for p in probes
            ]
            # The terms read first (as a search sends them with the user's totals): every probe's,
            # then half of them (the others' are read in the first round trip, their text queries
            # sent in a second).
            sent = [await retrieval.send_terms(conn, scope, t) for t in texts]
            terms = [await retrieval.read_terms(cur) for cur in sent]
            early = {
                which: await retrieval.candidate_lists_many(
                    conn, scope, [retrieval.Probe(p.embedding, p.text, known) for p, known in zip(probes, given, strict=True)],
                    model=EMBEDDER.model_name, limit=3, scan="exact",
                )
                for which, given in (("all", terms), ("half", [t if i % 2 else None for i, t in enumerate(terms)]))
            }  # fmt: skip
        assert terms[2] == retrieval.Terms({}), "stopwords only: no lexeme"
        assert ids(together) == ids(alone) == ids(early["all"]) == ids(early["half"])
        assert [len(near) for near, _ in together] == [3, 3, 3, 0]
        assert together[2][1] == [] and together[3][1], "stopwords match nothing; a word matches"
    finally:
        await pool.close()


async def test_a_spare_connection_is_never_waited_for(stack: RunningStack, tenant: str) -> None:
    """With every connection of the pool held, ``idle_tenant_transaction`` lends none at once
    (a request waiting for a second connection could deadlock with others doing the same)."""
    pool = create_pool(stack.settings.require_database_url(), name="test-idle", min_size=1, max_size=1)
    await pool.open()
    try:
        async with tenant_transaction(pool, tenant):
            started = asyncio.get_running_loop().time()
            async with idle_tenant_transaction(pool, tenant) as spare:
                assert spare is None
            assert asyncio.get_running_loop().time() - started < 1.0
        async with idle_tenant_transaction(pool, tenant) as spare:
            assert spare is not None
            cur = await spare.execute("SELECT current_setting('app.tenant_id')")
            assert await cur.fetchone() == (tenant,), "a lent connection acts for the tenant"
    finally:
        await pool.close()


async def test_no_spare_connection_while_the_pool_is_busy(stack: RunningStack, tenant: str) -> None:
    """Idle connections are not lent once as many are in use as the machine has cores: a
    sub-query beside another gains only while Postgres has a core to spare."""
    busy = tenancy.SPARE_WHILE_BUSY_BELOW
    pool = create_pool(stack.settings.require_database_url(), name="test-busy", min_size=busy + 1, max_size=busy + 1)
    await pool.open(wait=True)
    try:
        async with AsyncExitStack() as held:
            for _ in range(busy - 1):
                await held.enter_async_context(tenant_transaction(pool, tenant))
            async with idle_tenant_transaction(pool, tenant) as spare:
                assert spare is not None, "one core's worth in use: a spare is lent"
            await held.enter_async_context(tenant_transaction(pool, tenant))
            assert pool.get_stats()["pool_available"] == 1
            async with idle_tenant_transaction(pool, tenant) as spare:
                assert spare is None, "every core's worth in use: none, although one is idle"
    finally:
        await pool.close()


async def test_an_agent_key_sees_only_its_memory_in_every_sub_query(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    """Sub-queries that run on connections of their own act for the key's agent too."""
    mine = await store(stack, tenant, [
        {"content": "Agent b deploys the billing service with rsync.", "agent": "b"},
        {"content": "Agent b set the dashboard to a dark theme.", "agent": "b"},
    ])  # fmt: skip
    await store(stack, tenant, [
        {"content": "Agent c deploys the billing service with scp, secretly.", "agent": "c"},
        {"content": "Agent c set the dashboard to a light theme, secretly.", "agent": "c"},
    ])  # fmt: skip
    async with client_for(gateway_app, stack.key(tenant, agent="b")) as agent_b:
        response = await agent_b.get("/v1/search", params={
            "user_id": "u1", "q": "how is billing deployed; which dashboard theme", "decompose": "rules", "k": 10,
        })  # fmt: skip
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body["decomposition"]["queries"]) == 2
    assert {h["id"] for h in body["hits"]} == {str(i) for i in mine}


async def test_facts_and_skills_come_by_vector_and_by_text_in_one_statement(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    from memstream.extraction.types import Triple
    from sinks.postgres.facts import FactRecord, apply_facts
    from sinks.postgres.skills import SkillRun, record_run
    from sinks.postgres.tenancy import act_as

    await store(stack, tenant, [{"content": "we had lunch by the river"}])
    summary, task = "the payments team deploys with Kubernetes helm charts", "rollback the payments release"
    fact_vector, skill_vector = await EMBEDDER.embed([f"payments: {summary}", task])
    fact = FactRecord(
        fact_id=uuid.uuid4(), tenant_id=tenant, user_id="u1", agent_id="a", session_id="s", project_id=None,
        source_event_id=uuid.uuid4(), observed_at=datetime.now(UTC), entity="payments", category="decision",
        scope="global", summary=summary, importance=0.9, triples=(Triple("payments", "deploys with", "helm"),),
        shared=True, extractor="test/1", embedding=fact_vector,
    )  # fmt: skip
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        async with conn.transaction():
            await act_as(conn, tenant, actor="test")
            await apply_facts(conn, [fact], model=EMBEDDER.model_name, merge_threshold=0.92)
            for i, success in enumerate([True, True, False]):
                run = SkillRun(tenant, uuid.uuid4(), "u1", "a", True, "rollback", success,
                               "worked after a retry" if i == 1 else None, ["helm rollback", "verify pods"],
                               datetime.now(UTC) - timedelta(minutes=10 - i))  # fmt: skip
                await record_run(conn, run, embedding=skill_vector, model=EMBEDDER.model_name)
    hits = await search(gateway, tenant, "helm charts for payments and how to roll back", k=10)
    by_kind = {h["kind"]: h for h in hits}
    assert set(by_kind) == {"episode", "fact", "skill"}
    assert by_kind["fact"]["content"] == f"payments: {summary}" and by_kind["fact"]["scope"] == "global"
    assert by_kind["fact"]["importance"] == 0.9 and by_kind["fact"]["tags"] == ["decision"]
    assert by_kind["fact"]["parts"]["vector_rank"] and by_kind["fact"]["parts"]["text_rank"], "both lists found it"
    skill = by_kind["skill"]
    assert (
        skill["content"]
        == "Skill rollback (success rate 67%, 2 of 3): helm rollback; verify pods. Last feedback: worked after a retry"
    )
    assert skill["memory_type"] == "skill" and skill["parts"]["vector_rank"]
    only_text = await search(gateway, tenant, "Kubernetes helm", memory_types="fact,skill", mmr="false")
    assert [h["kind"] for h in only_text][:1] == ["fact"] and all(h["kind"] != "episode" for h in only_text)


async def test_a_skill_shows_one_success_rate_everywhere(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """Issue 46: a skill hit said "success rate 67 %" where the Skills view said 100 % (1 of 1).
    The smoothed (successes + 1) / (attempts + 2) ranks; every rate shown is successes / attempts."""
    from sinks.postgres.skills import SkillRun, record_run
    from sinks.postgres.tenancy import act_as

    (vector,) = await EMBEDDER.embed(["deploy the web shop"])
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        async with conn.transaction():
            await act_as(conn, tenant, actor="test")
            run = SkillRun(tenant, uuid.uuid4(), "u1", "a", True, "deploy", True, None, ["build", "rsync"],
                           datetime.now(UTC))  # fmt: skip
            await record_run(conn, run, embedding=vector, model=EMBEDDER.model_name)
    [hit] = await search(gateway, tenant, "deploy the web shop", memory_types="skill")
    assert hit["content"] == "Skill deploy (success rate 100%, 1 of 1): build; rsync"
    listed = (await gateway.get("/v1/skills", params={"user_id": "u1"})).json()["skills"]
    best = (await gateway.get("/v1/skills/best", params={"user_id": "u1", "task": "deploy the web shop"})).json()
    assert [s["success_rate"] for s in listed] == [s["success_rate"] for s in best["skills"]] == [1.0]
    [skill] = best["skills"]
    assert skill["score"] == pytest.approx(skill["similarity"] * 2 / 3), "ranked by the smoothed rate"


async def test_an_episodes_embedding_stays_in_its_row(stack: RunningStack, tenant: str) -> None:
    """Migration 0015: a turn long enough that its row passes 2 KB keeps its embedding inline
    (pgvector stores ``external``: by default it would go to the TOAST table, and every exact
    distance and every candidate read would fetch it from there). The same row in a table
    without the setting shows that it would have moved."""
    words = " ".join(f"{w}{i}" for i, w in enumerate(["deploy", "rollback", "latency", "replica", "quota"] * 10))
    (event_id,) = await store(stack, tenant, [{"content": f"Post-mortem notes: {words}."}])
    with stack.owner_db(tenant) as conn:
        size, toasted = conn.execute(
            "SELECT pg_column_size(e.*), pg_column_toast_chunk_id(embedding) FROM episodes e WHERE event_id = %s",
            (event_id,),
        ).fetchone() or (0, 0)
        conn.execute("CREATE TEMP TABLE default_layout (LIKE episodes INCLUDING DEFAULTS)")
        conn.execute("INSERT INTO default_layout SELECT * FROM episodes WHERE event_id = %s", (event_id,))
        (elsewhere,) = conn.execute("SELECT pg_column_toast_chunk_id(embedding) FROM default_layout").fetchone() or (
            None,
        )
    assert isinstance(size, int) and 2_100 < size < 4_000, "a row between the two thresholds"
    assert toasted is None, "the embedding is in the row"
    assert elsewhere is not None, "without the setting the same row's embedding goes to TOAST"
