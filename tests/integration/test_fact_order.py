"""Fact versions follow the time each fact was stated, not the order the facts arrive: two
sessions of one user sit on different partitions and may be applied in either order."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector_async

from memstream.extraction.types import Triple
from sinks.postgres.facts import FactRecord, apply_facts
from sinks.postgres.tenancy import act_as
from tests.fixtures.stack import RunningStack

DAY = datetime(2026, 11, 1, tzinfo=UTC)
MERGE = 0.92


def stated(tenant: str, summary: str, day: int, framework: str, *, axis: int) -> FactRecord:
    vector = np.zeros(8, dtype=np.float32)
    vector[axis] = 1.0  # orthogonal statements never merge by embedding
    return FactRecord(
        fact_id=uuid.uuid4(), tenant_id=tenant, user_id="u1", agent_id="a1", session_id=f"s{day}",
        project_id="cloudretail", source_event_id=uuid.uuid4(), observed_at=DAY + timedelta(days=day),
        entity="backend framework", category="decision", scope="project", summary=summary, importance=0.5,
        triples=(Triple("cloudretail", "uses", framework),), shared=False, extractor="test/1", embedding=vector,
    )  # fmt: skip


async def apply_in_order(stack: RunningStack, facts: list[FactRecord]) -> None:
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        for fact in facts:  # one batch each: the order they arrive in
            async with conn.transaction():
                await act_as(conn, fact.tenant_id, actor="worker")
                await apply_facts(conn, [fact], model="test", merge_threshold=MERGE)


def history(stack: RunningStack, tenant: str) -> list[tuple[Any, ...]]:
    """Each version as (event, version, valid from, valid to, superseded by's event, reason with event ids)."""
    with stack.db(tenant) as conn:
        rows = conn.execute(
            "SELECT f.source_event_id, f.version, f.valid_from, f.valid_to, n.source_event_id, f.change_reason,"
            " f.sources FROM facts f LEFT JOIN facts n ON n.tenant_id = f.tenant_id AND n.fact_id = f.superseded_by"
            " WHERE f.tenant_id = %s ORDER BY f.version",
            (tenant,),
        ).fetchall()
        edges = conn.execute(
            "SELECT e.object, e.valid_from, e.valid_to, f.source_event_id FROM edges e"
            " JOIN facts f ON f.tenant_id = e.tenant_id AND f.fact_id = e.fact_id"
            " WHERE e.tenant_id = %s ORDER BY e.valid_from",
            (tenant,),
        ).fetchall()
    return [*rows, *edges]


def events_of(facts: list[FactRecord]) -> dict[str, str]:
    return {str(f.fact_id): str(f.source_event_id) for f in facts}


def normalised(rows: list[tuple[Any, ...]], facts: list[FactRecord]) -> list[tuple[Any, ...]]:
    """Fact ids in reasons replaced by their events (each tenant has its own fact ids)."""
    ids = events_of(facts)
    out = []
    for row in rows:
        text = [ids.get(str(v), v) if isinstance(v, uuid.UUID) else v for v in row]
        out.append(tuple(_swap(v, ids) if isinstance(v, str) else v for v in text))
    return out


def _swap(text: str, ids: dict[str, str]) -> str:
    for fact_id, event_id in ids.items():
        text = text.replace(fact_id, f"<{event_id}>")
    return text


def three_statements(tenant: str) -> list[FactRecord]:
    return [
        stated(tenant, "The CloudRetail backend is FastAPI.", 1, "fastapi", axis=0),
        stated(tenant, "We moved CloudRetail to Litestar.", 3, "litestar", axis=1),
        stated(tenant, "CloudRetail now runs on Django.", 5, "django", axis=2),
    ]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3)))[1:])
async def test_every_arrival_order_gives_the_history_of_time_order(stack: RunningStack, order: tuple[int, ...]) -> None:
    in_time, shuffled = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    timely = three_statements(in_time)
    # The same statements (same event ids, so the rows compare) for the other tenant, arriving out of order.
    late = [FactRecord(**{**f.__dict__, "tenant_id": shuffled, "fact_id": uuid.uuid4()}) for f in timely]
    await apply_in_order(stack, timely)
    await apply_in_order(stack, [late[i] for i in order])

    expected = normalised(history(stack, in_time), timely)
    assert normalised(history(stack, shuffled), late) == expected
    versions = [row for row in expected if isinstance(row[1], int)]
    assert [v[1] for v in versions] == [1, 2, 3]
    assert versions[-1][0] == timely[-1].source_event_id and versions[-1][3] is None  # Django is current
    with stack.db(shuffled) as conn:
        current = conn.execute(
            "SELECT object FROM edges WHERE tenant_id = %s AND valid_to IS NULL", (shuffled,)
        ).fetchall()
    assert current == [("django",)]


async def test_a_late_restatement_joins_the_version_then_in_force(stack: RunningStack) -> None:
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    fastapi, litestar, _ = three_statements(tenant)
    again = stated(tenant, "the cloudretail backend is fastapi", 2, "fastapi", axis=0)
    await apply_in_order(stack, [fastapi, litestar, again])
    rows = history(stack, tenant)
    versions = [row for row in rows if isinstance(row[1], int)]
    assert [(v[0], v[1]) for v in versions] == [(fastapi.source_event_id, 1), (litestar.source_event_id, 2)]
    assert versions[0][6] == [fastapi.source_event_id, again.source_event_id]  # one more source, no new version
    assert versions[0][3] == litestar.observed_at  # still closed when Litestar was stated


async def test_a_restatement_in_time_merges_and_an_earlier_one_joins_the_first_version(stack: RunningStack) -> None:
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    first, _, _ = three_statements(tenant)
    later = stated(tenant, "The CloudRetail backend is FastAPI!", 2, "fastapi", axis=0)
    earlier = stated(tenant, "the cloudretail backend is fastapi", 0, "fastapi", axis=0)
    await apply_in_order(stack, [first, later, earlier])
    versions = [row for row in history(stack, tenant) if isinstance(row[1], int)]
    assert len(versions) == 1 and versions[0][3] is None
    assert versions[0][6] == [first.source_event_id, later.source_event_id, earlier.source_event_id]
