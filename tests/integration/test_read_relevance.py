"""What an agent feels on a small memory (about 20 turns over a month): a question naming only
the project finds the turn about it, and a question with nothing relevant gets no small talk.
Also the running totals the read path counts with (episode_counts, episode_terms): right
after inserts, updates, deletes, compaction and erasure, and never another tenant's."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from pgvector.psycopg import register_vector_async

from memstream.embedder.local import WordLlamaEmbedder
from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from tests.fixtures.stack import RunningStack

EMBEDDER = WordLlamaEmbedder()
SWITCH = "Big change: the blog moved from Jekyll to Hugo, the builds were far too slow."
MONTH = [
    "I'm starting a personal blog about hiking trails.",
    "The weather was lovely today, sunny and warm.",
    "I made a lasagna last night, it took three hours.",
    "It might rain tomorrow, I should bring an umbrella.",
    "Do you have a good recipe for banana bread?",
    "My cat knocked a glass off the table again.",
    SWITCH,
    "I'm thinking about buying new running shoes.",
    "Cooking pasta for friends this weekend, with lots of garlic.",
    "Such a windy afternoon, the trees were bending.",
    "I baked cookies with my niece, chocolate chip.",
    "Our neighbour's dog barked all night.",
    "The blog has twelve posts now, mostly about the Alps.",
    "Grilled vegetables for lunch, very tasty.",
    "Snow is forecast for the weekend, finally.",
    "I watched a documentary about octopuses.",
    "Made soup from the leftover vegetables.",
    "The sunset over the lake was beautiful.",
    "Tried a new coffee place downtown, too bitter.",
    "Heavy fog this morning, the bus was late.",
]
SMALL_TALK = ("weather", "lasagna", "banana", "cat", "pasta", "cookies", "dog", "soup", "fog", "coffee", "sunset")


async def store_month(stack: RunningStack, tenant: str, user: str = "u1") -> dict[str, uuid.UUID]:
    """The month's turns, one every day and a half, straight through the episode sink."""
    now = datetime.now(UTC)
    turns = [
        Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id=user, project_id=None, session_id=f"s{i}",
             role="user", content=text, event_time=now - timedelta(hours=36 * (len(MONTH) - i)))
        for i, text in enumerate(MONTH)
    ]  # fmt: skip
    await upsert(stack, turns)
    return {t.content: t.event_id for t in turns}


async def upsert(stack: RunningStack, turns: list[Turn]) -> None:
    """The turns as the ingest worker stores them (embedded, 10 tokens each), through the sink."""
    vectors = await EMBEDDER.embed([t.content for t in turns])
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(
            conn, [Episode(t, v, 10) for t, v in zip(turns, vectors, strict=True)], model=EMBEDDER.model_name
        )  # fmt: skip


async def test_a_question_naming_only_the_project_finds_the_switch(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """ "blog" is in 3 of 20 turns: it used to count as a common word and select nothing."""
    ids = await store_month(stack, tenant)
    response = await gateway.get("/v1/search", params={"user_id": "u1", "q": "Any news about the blog?", "k": 5})
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert str(ids[SWITCH]) in [h["id"] for h in hits[:3]], [h["content"] for h in hits]
    switch = next(h for h in hits if h["id"] == str(ids[SWITCH]))
    assert switch["parts"]["text_rank"] is not None, "found by its word, not only by its vector"


async def test_a_context_without_relevant_memory_holds_no_small_talk(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await store_month(stack, tenant)

    async def context(query: str) -> dict[str, Any]:
        response = await gateway.get(
            "/v1/context", params={"user_id": "u1", "session_id": "s99", "query": query, "budget": 2000}
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    unrelated = await context("How do I renew my passport?")
    relevant = {s["name"]: s for s in unrelated["sections"]}["relevant"]
    assert relevant["items"] == 0 and relevant["tokens"] == 0, unrelated["prompt"]
    assert not any(word in unrelated["prompt"].lower() for word in SMALL_TALK), unrelated["prompt"]
    assert unrelated["tokens"] < 100, "the unused budget stays unused"

    related = await context("What framework does the blog use now?")
    assert "Hugo" in related["prompt"], related["prompt"]
    assert not any(word in related["prompt"].lower() for word in SMALL_TALK), related["prompt"]


def recount(conn: psycopg.Connection[Any], tenant: str) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The totals kept by the triggers, and the same totals counted from the episodes now."""
    kept_counts = set(conn.execute(
        "SELECT user_id, project_id, agent_id, shared, episodes, episodic_tokens FROM episode_counts"
        " WHERE tenant_id = %s", (tenant,)).fetchall())  # fmt: skip
    counted = set(conn.execute(
        "SELECT user_id, coalesce(project_id, ''), agent_id, shared, count(*),"
        " coalesce(sum(token_count) FILTER (WHERE memory_type = 'episodic'), 0) FROM episodes"
        " WHERE tenant_id = %s AND archived_at IS NULL GROUP BY 1, 2, 3, 4", (tenant,)).fetchall())  # fmt: skip
    kept_terms = set(
        conn.execute(
            "SELECT user_id, lexeme, agent_id, shared, df FROM episode_terms WHERE tenant_id = %s", (tenant,)
        ).fetchall()
    )
    terms = set(conn.execute(
        "SELECT e.user_id, l, e.agent_id, e.shared, count(*) FROM episodes e, unnest(tsvector_to_array(e.tsv)) l"
        " WHERE e.tenant_id = %s AND e.archived_at IS NULL GROUP BY 1, 2, 3, 4", (tenant,)).fetchall())  # fmt: skip
    assert kept_counts == counted, kept_counts ^ counted
    assert kept_terms == terms, sorted(kept_terms ^ terms)[:10]
    return kept_counts, kept_terms


async def test_the_running_totals_follow_every_change(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    ids = await store_month(stack, tenant)
    await store_month(stack, tenant, user="u2")
    await store_month(stack, tenant, user="u2")  # a second copy: every df of u2 doubles
    other = f"{tenant}-x"
    await store_month(stack, other)
    with stack.db(tenant) as conn:
        counts, terms = recount(conn, tenant)
        assert ("u1", "", "a", False, 20, 200) in counts and ("u2", "", "a", False, 40, 400) in counts
        assert ("u1", "blog", "a", False, 3) in terms and ("u2", "blog", "a", False, 6) in terms
        assert conn.execute("SELECT count(*) FROM episode_terms WHERE tenant_id = %s", (other,)).fetchone() == (0,)
        # Upserting the same events again (at-least-once delivery) changes nothing.
    await upsert_again(stack, tenant, ids)
    with stack.db(tenant) as conn:
        assert recount(conn, tenant) == (counts, terms)
        # An update of no counted column changes nothing; archiving, an edit, sharing and a delete do.
        conn.execute("UPDATE episodes SET importance = importance WHERE user_id = 'u1'")
        conn.execute("UPDATE episodes SET archived_at = now() WHERE event_id = %s", (ids[SWITCH],))
        conn.execute("UPDATE episodes SET shared = true, token_count = 3 WHERE content LIKE '%%weather%%'")
        conn.execute("DELETE FROM episodes WHERE content LIKE '%%cat%%' AND user_id = 'u1'")
        conn.commit()
        counts, terms = recount(conn, tenant)
        assert ("u1", "hugo", "a", False, 1) not in terms, "an archived turn is not counted"
        assert ("u1", "", "a", False, 17, 170) in counts and ("u1", "", "a", True, 1, 3) in counts
    response = await gateway.post("/v1/users/u2/erase")
    assert response.status_code == 200, response.text
    with stack.db(tenant) as conn:
        counts, terms = recount(conn, tenant)
        assert not any(row[0] == "u2" for row in counts | terms), "an erased user leaves no word behind"
    with stack.db(other) as conn:
        assert ("u1", "blog", "a", False, 3) in recount(conn, other)[1], "another tenant's totals untouched"


async def upsert_again(stack: RunningStack, tenant: str, ids: dict[str, uuid.UUID]) -> None:
    now = datetime.now(UTC)
    turns = [
        Turn(event_id=event_id, tenant_id=tenant, agent_id="a", user_id="u1", project_id=None, session_id="s0",
             role="user", content=text, event_time=now)
        for text, event_id in ids.items()
    ]  # fmt: skip
    await upsert(stack, turns)


async def test_an_agent_bound_reader_counts_only_what_it_may_see(stack: RunningStack, tenant: str) -> None:
    """The totals carry the episodes' row-level security: another agent's private words are
    not in the document frequencies an agent-bound key reads (they would leak through IDF)."""
    await store_month(stack, tenant)
    with stack.db(tenant) as conn:
        conn.execute("SELECT set_config('app.agent_id', 'b', false)")
        assert conn.execute("SELECT count(*) FROM episode_terms WHERE tenant_id = %s", (tenant,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM episode_counts WHERE tenant_id = %s", (tenant,)).fetchone() == (0,)
        conn.execute("SELECT set_config('app.agent_id', 'a', false)")
        assert conn.execute("SELECT sum(episodes) FROM episode_counts WHERE tenant_id = %s", (tenant,)).fetchone() == (
            20,
        )
        for statement in ("DELETE FROM episode_terms", "UPDATE episode_counts SET episodes = 0"):
            try:
                conn.execute(statement)
            except psycopg.errors.InsufficientPrivilege:
                conn.rollback()
            else:
                raise AssertionError(f"the app role may run {statement}")
