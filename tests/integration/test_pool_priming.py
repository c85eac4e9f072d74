"""A gateway process primes its Postgres connections at start (``gateway_pool_warm``,
``sinks/postgres/queries/warmup.py``): every connection has the read path's statements
prepared before the first request, as a tenant no key can name, and leaves nothing behind."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector_async

from memstream.embedder.local import WordLlamaEmbedder
from schemas.turns import IDENTIFIER, TENANT_ID, Turn, problems
from sinks.postgres.api_keys import ApiKeyError, create_key
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.pool import create_pool
from sinks.postgres.queries import warmup
from sinks.postgres.queries.retrieval import Filters, Probe, candidate_lists_many
from sinks.postgres.tenancy import tenant_transaction
from tests.fixtures.stack import RunningStack

EMBEDDER = WordLlamaEmbedder()

#: Statements every primed connection holds prepared (a part of each one's text).
READ_PATH = {
    "the user's totals": "FROM episode_counts WHERE tenant_id",
    "the query's terms": "tsvector_to_array(to_tsvector(",
    "the nearest episodes by HNSW": "ORDER BY embedding::vector(",
    "the nearest episodes, exact": "ORDER BY distance LIMIT",
    "the episodes' text query": "owner_tsv @@",
    "facts' and skills' lists": "WITH visible_facts AS NOT MATERIALIZED",
    "a context's skills' lists": "WITH visible_skills AS NOT MATERIALIZED",
    "the facts of a context": "ORDER BY scope, entity, valid_from",
    "the tenant's settings": "set_config('app.tenant_id'",
}


def test_no_key_and_no_event_can_name_the_warm_up_tenant(stack: RunningStack) -> None:
    """Priming reads as ``WARM_TENANT``: no tenant may be named so, whatever asks."""
    assert TENANT_ID.fullmatch(warmup.WARM_TENANT) is None
    assert IDENTIFIER.fullmatch(warmup.WARM_USER) is None
    with stack.owner_db() as conn, pytest.raises(ApiKeyError, match="tenant id"):
        create_key(conn, tenant_id=warmup.WARM_TENANT, scopes=["read"], name="attack")
    record = {"tenant_id": warmup.WARM_TENANT, "agent_id": "a", "user_id": "u", "session_id": "s"}
    assert any("tenant_id" in problem for problem in problems(record, max_content_chars=100))


async def prepared(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
    return [str(r[0]) for r in await cur.fetchall()]


async def test_each_connection_has_the_read_path_prepared_and_nothing_else_changed(stack: RunningStack) -> None:
    pool = create_pool(stack.settings.require_database_url(), name="priming-test", min_size=3, max_size=3)
    await pool.open(wait=True)
    try:
        primed = await warmup.prime_pool(pool, 3, model=EMBEDDER.model_name, dim=EMBEDDER.dim,
                                         text_config="english", timeout_s=30)  # fmt: skip
        assert primed == 3
        held = [await pool.getconn() for _ in range(3)]
        try:
            assert len({id(c) for c in held}) == 3
            for conn in held:
                assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE, "committed"
                statements = await prepared(conn)
                missing = [name for name, part in READ_PATH.items() if not any(part in s for s in statements)]
                assert not missing, f"not prepared: {missing}"
                # What priming bounded was its own transaction's alone.
                cur = await conn.execute(
                    "SELECT current_setting('hnsw.max_scan_tuples', true), current_setting('statement_timeout'),"
                    " current_setting('transaction_read_only'), current_setting('app.tenant_id', true)"
                )
                max_scan, timeout, read_only, tenant = (await cur.fetchone()) or ()
                assert max_scan != "1" and timeout == "0" and read_only == "off" and not tenant
                await conn.rollback()
        finally:
            for conn in held:
                await pool.putconn(conn)
    finally:
        await pool.close()


async def test_a_primed_connection_answers_as_an_unprimed_one(stack: RunningStack, tenant: str) -> None:
    turns = [
        Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id="u1", project_id=None, session_id="s", role="user",
             content=text, event_time=datetime.now(UTC))
        for text in ("we deploy with rsync", "the cache is valkey", "dark mode please", "rsync needs checksums")
    ]  # fmt: skip
    vectors = await EMBEDDER.embed([t.content for t in turns])
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(conn, [Episode(t, v, 5) for t, v in zip(turns, vectors, strict=True)],
                              model=EMBEDDER.model_name)  # fmt: skip
    (query,) = await EMBEDDER.embed(["how do we deploy"])
    scope = Filters(tenant_id=tenant, user_id="u1")
    answers = []
    for prime in (False, True):
        pool = create_pool(stack.settings.require_database_url(), name="priming-test", min_size=1, max_size=1)
        await pool.open(wait=True)
        try:
            if prime:
                assert await warmup.prime_pool(pool, 1, model=EMBEDDER.model_name, dim=EMBEDDER.dim,
                                               text_config="english", timeout_s=30) == 1  # fmt: skip
            found = []
            for _ in range(7):  # past the five custom plans Postgres makes before a generic one
                async with tenant_transaction(pool, tenant, pipeline=True) as conn:
                    ((near, matched),) = await candidate_lists_many(
                        conn, scope, [Probe(query, "deploy rsync")], model=EMBEDDER.model_name, limit=4,
                        scan="exact",
                    )  # fmt: skip
                found.append(([c.id for c in near], [c.id for c in matched]))
            answers.append(found)
        finally:
            await pool.close()
    unprimed, primed = answers
    assert primed == unprimed
    assert len(unprimed[0][0]) == 4 and unprimed[0][1], "both lists found something"


async def test_a_pool_that_gets_no_connection_primes_none_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    pool = create_pool("postgresql://nobody@127.0.0.1:9/none?connect_timeout=1", name="priming-test")
    await pool.open(wait=False)
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger=warmup.__name__):
            primed = await warmup.prime_pool(pool, 2, model=EMBEDDER.model_name, dim=EMBEDDER.dim,
                                             text_config="english", timeout_s=0.5)  # fmt: skip
        assert primed == 0
        assert time.monotonic() - started < 5
        assert "got 0 of 2" in caplog.text
    finally:
        await asyncio.wait_for(pool.close(timeout=1), timeout=10)


async def test_the_pool_lends_the_connection_returned_last(stack: RunningStack) -> None:
    """Last in, first out (``LifoConnectionPool``): a quiet gateway keeps working on the same
    hot connection instead of lending each of its idle ones in turn."""
    pool = create_pool(stack.settings.require_database_url(), name="priming-test", min_size=3, max_size=3)
    await pool.open(wait=True)
    try:
        first, second, third = [await pool.getconn() for _ in range(3)]
        for conn in (first, second, third):
            await pool.putconn(conn)
        for _ in range(3):
            async with pool.connection() as conn:
                assert conn is third
        async with pool.connection() as outer, pool.connection() as inner:
            assert (outer, inner) == (third, second)
    finally:
        await pool.close()


async def test_a_pools_connections_read_times_in_utc_whatever_the_servers_zone(stack: RunningStack) -> None:
    """Every pool's connections run in the time zone UTC (``create_pool``): a time comes back as
    the same instant in ``datetime.timezone.utc``, not in a ``ZoneInfo`` of the server's
    default (the embedded server's is ``Etc/UTC``), which made reading a time several times
    dearer. A plain connection shows the server's own zone for comparison."""
    url = stack.settings.require_database_url()
    instant = datetime(2026, 12, 6, 5, 0, 0, 123456, tzinfo=UTC)
    async with await psycopg.AsyncConnection.connect(url, options="-c TimeZone=Europe/Paris") as plain:
        cur = await plain.execute("SELECT %s::timestamptz", (instant,))
        (elsewhere,) = await cur.fetchone() or (None,)
    assert elsewhere == instant and elsewhere.utcoffset().total_seconds() == 3600
    pool = create_pool(url, name="zone-test", min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT current_setting('TimeZone'), %s::timestamptz", (instant,))
            zone, read = await cur.fetchone() or (None, None)
    finally:
        await pool.close()
    assert zone == "UTC"
    assert read == instant and read.tzinfo is UTC
