"""Replay and rebuild on the real stack: a conversation goes through the live pipeline (ingest
and memory workers, a compaction by maintenance), then the memory is rebuilt from the event
log and compared with the live one by digest — into fresh tables switched in, in place after
losing it, after a crash mid-replay, for one user, for a time range, and with an LLM whose
recorded answers are reused."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from ops.demo import PROJECT, SESSION_1
from ops.stack.state import settings_env
from sinks.redis.buffer import SessionBuffers, SessionRef, session_buffers
from streams.replay.digests import Digest, differences
from streams.replay.runner import CRASH_EXIT, ReplayOptions, ReplayReport, run_replay, scope_digest
from streams.replay.scope import ReplayError, Scope, Target
from tests.fixtures.gemini import FakeGemini
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import count_rows, post_turns, turn

PROJECTION_TABLES = ("episodes", "facts", "edges", "skills", "skill_runs")


def conversation(tenant: str, user: str = "user-1") -> list[dict[str, Any]]:
    """Forty days ago a short session (compacted later); three days ago the seed session; a day
    later a second session that contradicts, repeats and refers back to the first."""
    now = datetime.now(UTC)
    old = now - timedelta(days=40)
    first = now - timedelta(days=3)
    second = now - timedelta(days=2)

    def at(start: datetime, i: int) -> str:
        return (start + timedelta(minutes=i)).isoformat()

    turns = [
        turn(tenant, f"{user}:s-old", text, user_id=user, role=role, event_time=at(old, i))
        for i, (role, text) in enumerate([
            ("user", "We decided to rotate the API keys every quarter."),
            ("assistant", "Noted: quarterly key rotation."),
            ("user", "The staging database is getting slow again."),
        ])
    ]  # fmt: skip
    for i, (role, content, project) in enumerate(SESSION_1):
        extra = {"tool_name": "kubectl", "tool_status": "success"} if role == "tool" else {}
        turns.append(turn(tenant, f"{user}:s-1", content, user_id=user, role=role, project_id=project,
                          event_time=at(first, i), **extra))  # fmt: skip
    for i, content in enumerate([
        "We moved CloudRetail from FastAPI to Litestar.",
        "Last session we chose Valkey as the cache.",
        "I prefer dark mode in every editor and terminal I use.",
    ]):  # fmt: skip
        turns.append(turn(tenant, f"{user}:s-2", content, user_id=user, project_id=PROJECT, event_time=at(second, i)))
    return turns


async def tool_events(gateway: httpx.AsyncClient, user: str = "user-1") -> int:
    day = datetime.now(UTC) - timedelta(days=2, hours=3)
    outcomes = [("success", None), ("failure", "the dist folder was not committed, so rsync shipped nothing")]
    for i, (status, feedback) in enumerate(outcomes):
        body = {"agent_id": "agent-1", "user_id": user, "session_id": "ops", "skill": "deploy", "status": status,
                "steps": ["build", "rsync dist/", "restart"], "event_time": (day + timedelta(minutes=i)).isoformat(),
                **({"feedback": feedback} if feedback else {})}  # fmt: skip
        assert (await gateway.post("/v1/tool-events", json=body)).status_code == 202
    return len(outcomes)


def maintain(stack: RunningStack, tenant: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ops", "maintain", "--tenant", tenant, "--no-forget", "--no-expire"],
        env={**os.environ, **settings_env(stack.settings)}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)[0]["compacted"], "the old session's day is compacted"


async def replay(
    stack: RunningStack, tenant: str, target: Target = "shadow", *, settings: Any = None, **options: Any
) -> ReplayReport:
    scope = Scope(tenant, options.pop("user", None), options.pop("since", None), options.pop("until", None))
    return await run_replay(settings or stack.settings, ReplayOptions(scope=scope, target=target, **options))


async def live_digest(stack: RunningStack, tenant: str, user: str | None = None) -> Digest:
    return await scope_digest(stack.settings, Scope(tenant, user))


async def settled(stack: RunningStack, tenant: str) -> Digest:
    """Wait until the live memory is what a rebuild of the log gives (the workers are done)."""
    rebuilt = (await replay(stack, tenant, "verify")).digest
    differ: list[str] = []

    async def same() -> bool:
        differ[:] = differences(rebuilt, await live_digest(stack, tenant))
        return not differ

    try:
        await eventually(same, timeout_s=60, interval_s=0.5)
    except AssertionError as exc:
        raise AssertionError(f"the live memory never equalled the rebuild: {differ} differ") from exc
    return rebuilt


async def logged_events(stack: RunningStack, tenant: str, count: int) -> None:
    """Wait until the tenant's log holds ``count`` events, then until the live memory settles."""
    await eventually(lambda: count_rows(stack, "event_log", tenant) == count, timeout_s=60)
    await settled(stack, tenant)


async def ingest(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, users: tuple[str, ...] = ("user-1",)
) -> Digest:
    """The conversation through the gateway and both workers, one session after the other in
    time order (each settled before the next, so the live workers see the log's order), then
    compaction; the settled digest."""
    turns = [t for user in users for t in conversation(tenant, user)]
    phases = [[t for t in turns if t["session_id"].endswith(suffix)] for suffix in (":s-old", ":s-1")]
    logged = 0
    for phase in phases:
        await post_turns(gateway, phase)
        logged += len(phase)
        await logged_events(stack, tenant, logged)
    for user in users:
        logged += await tool_events(gateway, user)
    await logged_events(stack, tenant, logged)
    last = [t for t in turns if t["session_id"].endswith(":s-2")]
    await post_turns(gateway, last)
    logged += len(last)
    await logged_events(stack, tenant, logged)
    maintain(stack, tenant)
    return await settled(stack, tenant)


@asynccontextmanager
async def buffers_of(stack: RunningStack) -> AsyncIterator[SessionBuffers]:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        yield session_buffers(client, stack.settings)
    finally:
        await client.aclose()


def rows(stack: RunningStack, tenant: str, query: str) -> list[tuple[Any, ...]]:
    with stack.owner_db(tenant) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


async def test_a_rebuild_equals_the_live_memory_and_rebuilds_are_identical(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    live = await ingest(stack, gateway, tenant)
    assert {name for name, d in live.items() if d["rows"]} == set(PROJECTION_TABLES), live
    [(versions, current)] = rows(stack, tenant, "SELECT count(*), count(*) FILTER (WHERE valid_to IS NULL) FROM facts")
    assert versions > current, "the history of superseded facts is part of what is rebuilt"
    assert rows(stack, tenant, "SELECT count(*) FROM episodes WHERE memory_type = 'summary'") == [(1,)]

    verified = await replay(stack, tenant, "verify")
    assert verified.matches and verified.digest == verified.live_digest == live

    first = await replay(stack, tenant)
    assert (first.status, first.digest) == ("switched", live)
    assert first.events == verified.events > 0 and first.events_per_s > 0
    second = await replay(stack, tenant, batch_size=7)
    assert second.digest == first.digest, "two rebuilds of the same log give identical memory"
    assert await live_digest(stack, tenant) == live
    audited = rows(stack, tenant, "SELECT count(*) FROM audit_log WHERE action = 'memory.rebuild'")
    assert audited == [(2,)]
    with stack.superuser_db() as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'memstream_replay_%'").fetchone()
    assert left == (0,), "the shadow schemas are dropped after the switch"

    response = await gateway.get("/v1/entities/backend framework/history", params={"user_id": "user-1"})
    assert [f["version"] for f in response.json()["facts"]] == [1, 2], "the gateway reads the rebuilt history"


async def test_in_place_restores_lost_memory_and_changes_nothing_when_run_again(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    live = await ingest(stack, gateway, tenant)
    unchanged = await replay(stack, tenant, "in-place")
    assert unchanged.digest == live, "in place over intact memory changes nothing"
    with stack.owner_db(tenant) as conn:
        for name in PROJECTION_TABLES:
            conn.execute(f"DELETE FROM {name}")  # noqa: S608 - constant table names: the memory is lost
    assert (await live_digest(stack, tenant))["episodes"]["rows"] == 0
    ref = SessionRef(tenant, "user-1", "user-1:s-1")
    async with buffers_of(stack) as buffers:
        kept = [t["event_id"] for t in await buffers.read(ref)]
        assert kept and await buffers.forget(tenant, "user-1") >= 1
        restored = await replay(stack, tenant, "in-place", buffers=True)
        assert restored.status == "done" and restored.digest == live
        assert [t["event_id"] for t in await buffers.read(ref)] == kept, "--buffers refills the buffer"


async def test_a_replay_killed_midway_resumes_from_its_checkpoint_to_the_same_memory(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    live = await ingest(stack, gateway, tenant)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ops", "replay", "--tenant", tenant, "--batch-size", "4", *args],
            env={**os.environ, **settings_env(stack.settings)}, capture_output=True, text=True, check=False,
        )  # fmt: skip

    crashed = cli("--fail-after-batches", "3")
    assert crashed.returncode == CRASH_EXIT, crashed.stderr
    with stack.owner_db() as conn:
        [(run_id, status, done)] = conn.execute(
            "SELECT r.run_id::text, r.status, p.events_done FROM replay_runs r JOIN replay_progress p USING (run_id)"
            " WHERE p.tenant_id = %s AND r.status = 'running'",
            (tenant,),
        ).fetchall()
    assert status == "running" and done == 12, "three batches of four were checkpointed before the crash"

    resumed = cli()
    assert resumed.returncode == 0, resumed.stderr
    report = orjson.loads(resumed.stdout)
    assert report["run_id"] == run_id and report["resumed"] and report["status"] == "switched"
    assert report["events"] == count_rows(stack, "event_log", tenant) - 12, "the checkpointed batches are not redone"
    assert report["digest"] == live, "the resumed rebuild equals the live memory"
    assert "events/s" in resumed.stderr and "ETA" in resumed.stderr, "progress is reported on stderr"


async def test_scopes_rebuild_one_user_or_a_time_range_and_nothing_else(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    live = await ingest(stack, gateway, tenant, ("ann", "bob"))
    ann, bob = await live_digest(stack, tenant, "ann"), await live_digest(stack, tenant, "bob")
    with stack.owner_db(tenant) as conn:
        conn.execute("DELETE FROM facts")
        conn.execute("DELETE FROM episodes WHERE session_id LIKE '%:s-2'")

    report = await replay(stack, tenant, user="ann")
    assert report.digest == ann and report.events == len(conversation(tenant)) + 3, "turns, tool events, compaction"
    assert await live_digest(stack, tenant, "ann") == ann
    assert (await live_digest(stack, tenant, "bob"))["facts"]["rows"] == 0, "another user's memory is not touched"

    since = datetime.now(UTC) - timedelta(days=2, hours=1)  # session s-2 only
    in_range = await replay(stack, tenant, "in-place", user="bob", since=since)
    assert in_range.events == 3
    restored = rows(stack, tenant, "SELECT count(*) FROM episodes WHERE session_id = 'bob:s-2'")
    assert restored == [(3,)]
    with pytest.raises(ReplayError, match="in-place"):
        await replay(stack, tenant, "shadow", since=since)
    with pytest.raises(ReplayError, match="--tenant"):
        await run_replay(stack.settings, ReplayOptions(scope=Scope(user_id="bob")))
    assert await replay(stack, tenant, "verify", user="bob") is not None
    assert (await replay(stack, tenant)).digest == live, "the whole tenant rebuilt is the original memory"
    assert bob != ann


async def test_recorded_llm_extractions_are_reused_unless_asked_to_re_extract(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str, gemini: FakeGemini
) -> None:
    turns = [t for t in conversation(tenant) if t["session_id"].endswith(":s-1")][:6]
    await post_turns(gateway, turns)
    await eventually(lambda: count_rows(stack, "event_log", tenant) == len(turns), timeout_s=60)
    llm = stack.settings.model_copy(
        update={"llm_provider": "gemini", "gemini_api_key": SecretStr("test-key"), "gemini_base_url": gemini.base_url,
                "embedding_provider": "local", "llm_retry_initial_s": 0.01, "llm_retry_max_s": 0.02}
    )  # fmt: skip
    extracted = [t for t in turns if t["role"] in ("user", "assistant")]
    fact = {"entity": "Theme", "category": "preference", "scope": "global", "project_id": None,
            "summary": "The user prefers dark mode.", "importance": 0.7, "triples": []}  # fmt: skip
    for _ in extracted:
        gemini.then_json({"facts": [fact]})

    def calls() -> int:
        return sum(1 for path, _ in gemini.requests if path.endswith(":generateContent"))

    first = await replay(stack, tenant, "verify", settings=llm, re_extract=True)
    assert calls() == len(extracted), "every user and assistant turn went to the model once"
    recorded = rows(stack, tenant, "SELECT DISTINCT extractor, produced_by FROM extractions")
    assert recorded == [("gemini/gemini-2.5-flash/extract-1",) * 2]
    assert first.digest["facts"]["rows"] == 1

    again = await replay(stack, tenant, "verify", settings=llm)
    assert calls() == len(extracted), "a replay reuses the recorded answers"
    assert again.digest == first.digest

    gemini.reset()
    for _ in extracted:
        gemini.then_json({"facts": [fact]})
    redone = await replay(stack, tenant, "verify", settings=llm, re_extract=True)
    assert calls() == len(extracted) and redone.digest["facts"]["rows"] == 1
