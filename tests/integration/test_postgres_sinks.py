"""The Postgres sinks: idempotent on event id, the event log append-only, least privilege."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector_async

from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.event_log import append_events
from tests.fixtures.stack import RunningStack
from tests.integration.helpers import count_rows


def make_turn(tenant: str, n: int, *, offset: int | None = None) -> Turn:
    return Turn(
        event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{tenant}/{n}"),
        tenant_id=tenant,
        agent_id="a",
        user_id="u",
        project_id=None,
        session_id="s",
        role="user",
        content=f"turn number {n}",
        event_time=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n),
        tags=("x",),
        metadata={"n": str(n)},
        schema_id=1,
        topic="memstream.turns.v1",
        partition=0,
        offset=n if offset is None else offset,
    )


async def app_connection(stack: RunningStack) -> psycopg.AsyncConnection[tuple[object, ...]]:
    conn = await psycopg.AsyncConnection.connect(stack.settings.require_database_url())
    await register_vector_async(conn)
    return conn


async def test_redelivered_batches_never_duplicate(stack: RunningStack, tenant: str) -> None:
    turns = [make_turn(tenant, n) for n in range(10)]
    episodes = [Episode(t, np.full(4, 0.5, dtype=np.float32), 3) for t in turns]
    async with await app_connection(stack) as conn:
        assert len((await append_events(conn, turns))[tenant]) == 10
        newcomer = make_turn(tenant, 10)
        assert await append_events(conn, [*turns[5:], newcomer]) == {tenant: [newcomer.event_id]}
        assert len((await upsert_episodes(conn, episodes, model="test/m@4"))[tenant]) == 10
        assert await upsert_episodes(conn, episodes + episodes[:2], model="test/m@4") == {}
    assert count_rows(stack, "event_log", tenant) == 11
    assert count_rows(stack, "episodes", tenant) == 10
    with stack.db(tenant) as conn:
        rows = conn.execute(
            "SELECT source_offset FROM event_log WHERE tenant_id = %s ORDER BY seq", (tenant,)
        ).fetchall()
    assert [r[0] for r in rows] == list(range(11)), "the log keeps the order events were read in"


async def test_same_event_id_in_two_tenants_is_two_events(stack: RunningStack, tenant: str) -> None:
    other = tenant + "-other"
    shared = make_turn(tenant, 1)
    async with await app_connection(stack) as conn:
        await append_events(conn, [shared])
        await append_events(conn, [replace(shared, tenant_id=other)])
    assert count_rows(stack, "event_log", tenant) == 1
    assert count_rows(stack, "event_log", other) == 1


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE event_log SET content = 'rewritten' WHERE tenant_id = %s",
        "DELETE FROM event_log WHERE tenant_id = %s",
    ],
)
async def test_the_event_log_cannot_be_rewritten(stack: RunningStack, tenant: str, statement: str) -> None:
    async with await app_connection(stack) as conn:
        await append_events(conn, [make_turn(tenant, 1)])
    with stack.db(tenant) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement, (tenant,))  # the app role has no such privilege
    with (
        stack.owner_db(tenant) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
    ):
        conn.execute(statement, (tenant,))  # and the trigger refuses even the owner
    with (
        stack.owner_db(tenant) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
    ):
        conn.execute("TRUNCATE event_log")
    assert count_rows(stack, "event_log", tenant) == 1


def test_the_app_role_owns_nothing_and_cannot_change_the_schema(stack: RunningStack) -> None:
    with stack.db() as conn:
        owned = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
            " WHERE r.rolname = current_user AND c.relkind IN ('r', 'i', 'S')"
            " AND c.relpersistence <> 't'"  # its own temporary staging tables are all it may create
        ).fetchone()
        assert owned == (0,)
        attrs = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        assert attrs == (False, False)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DROP TABLE episodes")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE sneaky (x int)")


async def test_vectors_record_their_model_and_dimension(stack: RunningStack, tenant: str) -> None:
    async with await app_connection(stack) as conn:
        await upsert_episodes(
            conn,
            [Episode(make_turn(tenant, 1), np.ones(3, dtype=np.float32) / 3**0.5, 2)],
            model="test/m@3",
        )
    with stack.db(tenant) as conn:
        row = conn.execute(
            "SELECT embedding_model, embedding_dim, vector_dims(embedding), token_count, tsv::text"
            " FROM episodes WHERE tenant_id = %s",
            (tenant,),
        ).fetchone()
    assert row is not None
    assert row[:4] == ("test/m@3", 3, 3, 2)
    assert "'turn'" in str(row[4])
