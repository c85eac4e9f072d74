"""Which facts apply (issue 46): without ``project_id``, ``/v1/entities`` and ``/v1/context``
returned every project's facts. The documented rule: the user's global facts, plus the
project's with ``project_id`` (the seeds' ``user AND (project = P OR scope = 'global')``) and
the session's with ``session_id``; ``/v1/entities?all=true`` lists every project's and
session's too (the explorer's Facts view)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
from pgvector.psycopg import register_vector_async

from memstream.embedder.local import WordLlamaEmbedder
from tests.fixtures.stack import RunningStack

EMBEDDER = WordLlamaEmbedder()
USER = "u1"
#: (key, scope, project, session, entity, summary): one fact each.
FACTS = [
    ("theme", "global", None, "s-1", "theme", "I prefer dark mode."),
    ("valkey", "project", "CloudRetail", "s-1", "cache", "CloudRetail caches with Valkey."),
    ("memcached", "project", "Payments", "s-3", "cache", "Payments caches with Memcached."),
    ("deadline", "session", None, "s-1", "deadline", "Today's deadline is 5 pm."),
]


async def seed_facts(stack: RunningStack, tenant: str) -> dict[uuid.UUID, str]:
    """The facts above, through the fact sink; their ids by key."""
    from sinks.postgres.facts import FactRecord, apply_facts
    from sinks.postgres.tenancy import act_as

    vectors = await EMBEDDER.embed([f"{entity}: {summary}" for *_, entity, summary in FACTS])
    records = [
        FactRecord(
            fact_id=uuid.uuid4(),
            tenant_id=tenant,
            user_id=USER,
            agent_id="a",
            session_id=session,
            project_id=project,
            source_event_id=uuid.uuid4(),
            observed_at=datetime.now(UTC),
            entity=entity,
            category="preference",
            scope=scope,
            summary=summary,
            importance=0.8,
            triples=(),
            shared=True,
            extractor="test/1",
            embedding=vector,
        )
        for (_, scope, project, session, entity, summary), vector in zip(FACTS, vectors, strict=True)
    ]
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        async with conn.transaction():
            await act_as(conn, tenant, actor="test")
            await apply_facts(conn, records, model=EMBEDDER.model_name, merge_threshold=0.92)
    return {r.fact_id: key for r, (key, *_) in zip(records, FACTS, strict=True)}


async def entities(gateway: httpx.AsyncClient, **params: str) -> set[str]:
    response = await gateway.get("/v1/entities", params={"user_id": USER, **params})
    assert response.status_code == 200, response.text
    return {f["summary"] for f in response.json()["facts"]}


def summaries(*keys: str) -> set[str]:
    return {summary for key, *_, summary in FACTS if key in keys}


async def test_entities_lists_the_facts_that_apply(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await seed_facts(stack, tenant)
    assert await entities(gateway) == summaries("theme"), "no project: the global facts, no project's"
    assert await entities(gateway, session_id="s-1") == summaries("theme", "deadline")
    assert await entities(gateway, session_id="s-2") == summaries("theme")
    assert await entities(gateway, project_id="CloudRetail") == summaries("theme", "valkey")
    assert await entities(gateway, project_id="Payments", session_id="s-1") == summaries(
        "theme", "memcached", "deadline"
    )
    assert await entities(gateway, project_id="Elsewhere") == summaries("theme")
    assert await entities(gateway, scope="project") == set(), "a scope filters what applies"
    # Everything, as the explorer lists it; a project or session named still narrows its scope.
    assert await entities(gateway, all="true") == summaries("theme", "valkey", "memcached", "deadline")
    assert await entities(gateway, all="true", project_id="Payments") == summaries("theme", "memcached", "deadline")
    assert await entities(gateway, all="true", scope="project") == summaries("valkey", "memcached")


async def test_the_context_holds_the_facts_that_apply(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    ids = await seed_facts(stack, tenant)

    async def context(**params: str) -> tuple[set[str], str]:
        response = await gateway.get("/v1/context", params={"user_id": USER, "budget": "2000", **params})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return {ids[uuid.UUID(i)] for i in body["facts"]}, str(body["prompt"])

    keys, prompt = await context(session_id="s-2")
    assert keys == {"theme"}, "a new session, no project: the global facts only"
    assert "dark mode" in prompt and "Valkey" not in prompt and "Memcached" not in prompt
    keys, prompt = await context(session_id="s-1", project_id="CloudRetail")
    assert keys == {"theme", "valkey", "deadline"}
    assert "- [project CloudRetail] cache: CloudRetail caches with Valkey." in prompt and "Memcached" not in prompt
