"""A turn's extraction context on the real Postgres: the session's turns logged before it,
whatever the ingest worker's lag, so live extraction, a redelivery and a replay agree.

The offline extractor drops an assistant turn that only repeats what the user said in the
recent turns ("Got it, dark mode everywhere."); given no context, it keeps it as a fact of
its own. Which one happens is what these tests watch."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from memstream.extraction.factory import MemoryModels
from memstream.extraction.offline import RuleExtractor
from memstream.summarization.offline import ExtractiveSummarizer
from schemas.turns import Turn
from sinks.postgres.event_log import append_events
from sinks.postgres.maintenance import register_tenants
from sinks.postgres.pool import create_pool
from streams.decoding import Decoded
from streams.stages import extract
from streams.stages.extract import ExtractionStage
from tests.fixtures.stack import RunningStack

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class Published:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def publish(self, events: Sequence[dict[str, Any]]) -> None:
        self.events.extend(events)

    def by_source(self, turn: Turn) -> list[str]:
        return sorted(e["entity"] for e in self.events if e["source_event_id"] == str(turn.event_id))


@pytest_asyncio.fixture(loop_scope="session")
async def pool(stack: RunningStack) -> AsyncIterator[AsyncConnectionPool]:
    opened = create_pool(stack.settings.require_database_url(), name="test-context", max_size=2)
    await opened.open()
    yield opened
    await opened.close()


def stage(pool: AsyncConnectionPool, published: Published) -> ExtractionStage:
    rules = RuleExtractor()
    models = MemoryModels(rules, ExtractiveSummarizer(), rules, ExtractiveSummarizer(), None)
    return ExtractionStage(SimpleNamespace(pool=pool, models=models), published)  # type: ignore[arg-type]


def conversation(tenant: str) -> list[Turn]:
    said = [
        ("user", "Hi! I prefer dark mode in every editor and terminal I use."),
        ("tool", "$ ls ~/.config\nnvim kitty"),
        ("assistant", "Got it, dark mode everywhere."),
    ]
    return [
        Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id="u", project_id=None, session_id="s1",
             role=role, content=content, event_time=START + timedelta(seconds=i), schema_id=1,
             topic="memstream.turns.v1", partition=0, offset=i)
        for i, (role, content) in enumerate(said)
    ]  # fmt: skip


async def log(pool: AsyncConnectionPool, turns: Sequence[Turn]) -> None:
    """What the ingest worker's event-log stage does."""
    async with pool.connection() as conn:
        await register_tenants(conn, {t.tenant_id for t in turns})
        await append_events(conn, turns)


def batch(turns: Sequence[Turn]) -> list[Decoded]:
    return [Decoded(turn=t, event=None) for t in turns]  # type: ignore[arg-type]


async def test_a_turn_waits_for_the_ingest_worker_to_log_the_turns_before_it(
    pool: AsyncConnectionPool, tenant: str
) -> None:
    user, tool, assistant = conversation(tenant)
    published = Published()
    live = stage(pool, published)
    await live.write(batch([user]))  # the memory worker is ahead: nothing is logged yet
    assert published.by_source(user) == ["theme"]

    extracting = asyncio.create_task(live.write(batch([tool, assistant])))
    await asyncio.sleep(0.3)
    assert not extracting.done(), "the assistant turn was extracted before its context was logged"
    await log(pool, [user, tool, assistant])  # the ingest worker catches up
    await asyncio.wait_for(extracting, timeout=10)
    assert published.by_source(assistant) == [], "the confirmation was taken for a new fact"

    # A redelivery, and the same turns in one batch (as a replay may batch them), agree.
    for turns in ([assistant], [user, tool, assistant]):
        again = Published()
        await stage(pool, again).write(batch(turns))
        assert again.by_source(assistant) == []
        assert again.by_source(user) == (["theme"] if user in turns else [])


async def test_a_turn_the_log_never_gets_is_extracted_after_the_wait_and_said(
    pool: AsyncConnectionPool, tenant: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    user, tool, assistant = conversation(tenant)
    await log(pool, [user, tool])
    monkeypatch.setattr(extract, "CONTEXT_WAIT_S", 0.3)
    published = Published()
    with caplog.at_level(logging.WARNING, logger=extract.__name__):
        await asyncio.wait_for(stage(pool, published).write(batch([assistant])), timeout=10)
    assert f"turn {assistant.event_id} is not in the event log" in caplog.text
    assert published.by_source(assistant) == [], "the turns logged so far were its context"


async def test_a_forgotten_turn_does_not_wait(
    pool: AsyncConnectionPool, stack: RunningStack, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _, assistant = conversation(tenant)
    await log(pool, [user])
    with stack.db(tenant) as conn:
        conn.execute("SELECT memstream_erase_user(%s)", ("u",))
    monkeypatch.setattr(extract, "CONTEXT_WAIT_S", 30.0)
    published = Published()
    await asyncio.wait_for(stage(pool, published).write(batch([assistant])), timeout=5)
