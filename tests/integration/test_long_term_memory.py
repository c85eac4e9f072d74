"""Long-term memory on the real stack with the offline extractor and summariser: scoped
facts from the seed scenario, supersede with history, merge of duplicates, the graph,
skills and lessons, summarize-before-trim, expiry, compaction and forgetting."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import orjson
import psycopg
from fastapi import FastAPI
from pgvector.psycopg import register_vector_async

from ops.demo import PROJECT, SESSION_1
from ops.stack.state import settings_env
from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import count_rows, post_turns, turn


def seed_turns(tenant: str, user: str, session: str) -> list[dict[str, Any]]:
    return [
        turn(tenant, session, content, role=role, user_id=user, project_id=project,
             **({"tool_name": "kubectl", "tool_status": "success"} if role == "tool" else {}))
        for role, content, project in SESSION_1
    ]  # fmt: skip


async def current_facts(gateway: httpx.AsyncClient, user: str, **params: str) -> list[dict[str, Any]]:
    response = await gateway.get("/v1/entities", params={"user_id": user, **params})
    assert response.status_code == 200, response.text
    facts: list[dict[str, Any]] = response.json()["facts"]
    return facts


def by_subject(facts: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    return {(f["scope"], f["project_id"], f["entity"]): f for f in facts}


async def facts_settled(gateway: httpx.AsyncClient, user: str, expected: int) -> None:
    async def settled() -> bool:
        return len(await current_facts(gateway, user, all="true")) >= expected

    await eventually(settled, timeout_s=60)


async def test_seed_scenario_becomes_scoped_facts_and_session_2_finds_them(
    running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await post_turns(gateway, seed_turns(tenant, "u1", "s1"))
    await facts_settled(gateway, "u1", 8)
    facts = by_subject(await current_facts(gateway, "u1", all="true"))
    for entity in ("theme", "language", "database"):
        assert facts[("global", None, entity)]["category"] == "preference"
    for entity in ("backend framework", "cache", "tool timeout", "deployment region", "database"):
        fact = facts[("project", PROJECT, entity)]
        assert fact["category"] in ("rule", "constraint")
    assert "dark mode" in facts[("global", None, "theme")]["summary"]
    assert "AlloyDB" in facts[("project", PROJECT, "database")]["summary"]
    # Session 2 (a new session) asks for its project: global preferences and the project's rules.
    scoped = by_subject(await current_facts(gateway, "u1", project_id=PROJECT))
    assert ("global", None, "theme") in scoped and ("project", PROJECT, "tool timeout") in scoped
    other = by_subject(await current_facts(gateway, "u1", project_id="Payments"))
    assert all(scope == "global" for scope, _, _ in other)
    assert all(f["extractor"] == "offline-rules/1" for f in facts.values())


async def test_a_contradiction_supersedes_and_history_keeps_the_old_version(
    running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    start = datetime.now(UTC) - timedelta(days=3)
    first = turn(tenant, "s1", "Project rule for CloudRetail: the backend is FastAPI running on AlloyDB.",
                 project_id=PROJECT, event_time=start.isoformat())  # fmt: skip
    await post_turns(gateway, [first])
    await facts_settled(gateway, "user-1", 2)
    moved = turn(tenant, "s2", "We moved CloudRetail from FastAPI to Litestar.", project_id=PROJECT,
                 event_time=(start + timedelta(days=1)).isoformat())  # fmt: skip
    [moved_id] = await post_turns(gateway, [moved])

    async def superseded() -> bool:
        now = by_subject(await current_facts(gateway, "user-1", project_id=PROJECT))
        return "Litestar" in now.get(("project", PROJECT, "backend framework"), {}).get("summary", "")

    await eventually(superseded, timeout_s=60)
    history = (await gateway.get("/v1/entities/backend framework/history", params={"user_id": "user-1"})).json()
    versions = [(f["version"], "Litestar" in f["summary"], f["valid_to"] is None) for f in history["facts"]]
    assert versions == [(1, False, False), (2, True, True)]
    old, new = history["facts"]
    assert old["superseded_by"] == new["fact_id"] and "supersedes version 1" in new["change_reason"]
    assert new["source_event_id"] == moved_id
    # "What was the backend in between?": as of the day before the move, FastAPI.
    then = by_subject(
        await current_facts(gateway, "user-1", project_id=PROJECT, at=(start + timedelta(hours=12)).isoformat())
    )
    assert "FastAPI" in then[("project", PROJECT, "backend framework")]["summary"]


async def test_a_repeated_statement_merges_instead_of_piling_up(
    running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    statement = "I prefer dark mode in every editor."
    await post_turns(gateway, [turn(tenant, "s1", statement)])
    await facts_settled(gateway, "user-1", 1)
    await post_turns(
        gateway, [turn(tenant, "s2", statement), turn(tenant, "s3", "I prefer dark mode in every editor!")]
    )

    async def merged() -> bool:
        facts = await current_facts(gateway, "user-1")
        return len(facts) == 1 and len(facts[0]["sources"]) == 3

    await eventually(merged, timeout_s=60)
    history = (await gateway.get("/v1/entities/theme/history", params={"user_id": "user-1"})).json()["facts"]
    assert len(history) == 1, "duplicates add sources, not versions"


async def test_two_hop_graph_query(
    running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await post_turns(gateway, seed_turns(tenant, "u1", "s1"))

    async def two_hops() -> list[dict[str, Any]] | bool:
        response = await gateway.get(
            "/v1/graph/neighbors", params={"entity": "CloudRetail", "depth": 2, "user_id": "u1"}
        )
        found = response.json()["neighbors"]
        # Valkey's fact comes from a later turn than AlloyDB's: it may land in a later extraction batch.
        return found if {"alloydb", "valkey"} <= {n["entity"] for n in found} else False

    await eventually(two_hops, timeout_s=60)
    found = {n["entity"]: n for n in (await gateway.get(
        "/v1/graph/neighbors", params={"entity": "cloudretail", "depth": 2})).json()["neighbors"]}  # fmt: skip
    assert found["fastapi"]["depth"] == 1 and found["valkey"]["depth"] == 1
    assert found["alloydb"]["depth"] == 2
    assert found["alloydb"]["path"] == ["cloudretail -uses-> fastapi", "fastapi -runs_on-> alloydb"]
    one_hop = (await gateway.get("/v1/graph/neighbors", params={"entity": "cloudretail", "depth": 1})).json()
    assert "alloydb" not in {n["entity"] for n in one_hop["neighbors"]}
    assert (await gateway.get("/v1/graph/neighbors", params={"entity": "x", "depth": 9})).status_code == 422


async def test_a_failed_deploy_lowers_the_success_rate_and_is_recalled(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    day1 = datetime.now(UTC) - timedelta(days=30)
    events = [("success", None, day1), ("success", None, day1 + timedelta(days=7)),
              ("failure", "the dist folder was not committed, so rsync shipped an empty build",
               day1 + timedelta(days=20))]  # fmt: skip
    for status, feedback, when in events:
        body = {"agent_id": "agent-1", "user_id": "user-1", "session_id": "ops", "skill": "deploy",
                "status": status, "steps": ["build", "rsync dist/ to the servers", "restart"],
                "event_time": when.isoformat(), **({"feedback": feedback} if feedback else {})}  # fmt: skip
        assert (await gateway.post("/v1/tool-events", json=body)).status_code == 202
    await gateway.post("/v1/tool-events", json={**body, "skill": "rollback", "status": "success"})

    async def counted() -> dict[str, Any] | bool:
        skills = (
            await gateway.get("/v1/skills/best", params={"user_id": "user-1", "task": "deploy the release"})
        ).json()["skills"]
        deploy = next((s for s in skills if s["name"] == "deploy"), None)
        return deploy if deploy and deploy["attempts"] == 3 else False

    await eventually(counted, timeout_s=60)
    skills = (await gateway.get("/v1/skills/best", params={"user_id": "user-1", "task": "deploy the release"})).json()[
        "skills"
    ]
    deploy = skills[0]
    assert deploy["name"] == "deploy" and (deploy["attempts"], deploy["successes"]) == (3, 2)
    assert deploy["success_rate"] == 2 / 3, "shown as it is; (2 + 1) / (3 + 2) only ranks"
    assert deploy["steps"] == ["build", "rsync dist/ to the servers", "restart"]
    assert "dist folder" in deploy["last_feedback"]

    async def lesson() -> dict[str, Any] | bool:
        hits = (
            await gateway.get(
                "/v1/search", params={"user_id": "user-1", "q": "what went wrong with the last deployment"}
            )
        ).json()["hits"]
        return next((h for h in hits if h["memory_type"] == "procedural"), False)

    await eventually(lesson, timeout_s=60)
    hit = await lesson()
    assert isinstance(hit, dict) and "dist folder was not committed" in hit["content"]
    assert hit["importance"] >= 0.9 and hit["content"].startswith("Lesson from a failed deploy")


async def test_a_session_past_its_window_gets_a_rolling_summary_and_shrinks(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    window = stack.settings.buffer_max_turns
    decisions = [
        "We decided to deploy with rsync, not scp.",
        "From now on every tool call gets a 30 second timeout.",
        "We will use Valkey as the only cache.",
    ]
    noise = [f"random chatter number {i} about the weather" for i in range(window + 5)]
    await post_turns(gateway, [turn(tenant, "long", c) for c in decisions + noise])

    total = len(decisions) + len(noise)

    async def folded() -> dict[str, Any] | bool:
        body = (await gateway.get("/v1/sessions/long/buffer", params={"user_id": "user-1"})).json()
        done = body["summary"] and not body["pending"] and body["summary"]["turns"] + len(body["turns"]) == total
        return body if done else False

    await eventually(folded, timeout_s=60)
    body = (await gateway.get("/v1/sessions/long/buffer", params={"user_id": "user-1"})).json()
    assert len(body["turns"]) == window, "the buffer shrinks to its window"
    assert [t["content"] for t in body["turns"]] == noise[-window:]
    summary = body["summary"]
    for decision in ("rsync", "30 second timeout", "Valkey"):
        assert decision in summary["text"], summary["text"]
    assert "weather" not in summary["text"]
    assert summary["turns"] == len(decisions) + len(noise) - window
    assert summary["calls"] >= 1 and summary["summarizer"] == "offline-extractive/1"


async def store_old_episodes(
    stack: RunningStack, tenant: str, user: str, day: datetime, n: int, *, agent: str = "agent-1", shared: bool = False
) -> list[uuid.UUID]:
    turns = [
        Turn(
            event_id=uuid.uuid4(),
            tenant_id=tenant,
            agent_id=agent,
            shared=shared,
            user_id=user,
            project_id=None,
            session_id="old",
            role="user",
            content=f"on that day we decided to rotate the keys, step {i}",
            event_time=day + timedelta(minutes=i),
        )
        for i in range(n)
    ]
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(
            conn, [Episode(t, np.full(256, 1 / 16, dtype=np.float32), 10, importance=0.4 + i / 100)
                   for i, t in enumerate(turns)], model="wordllama/l2_supercat@256",
        )  # fmt: skip
    return [t.event_id for t in turns]


def maintain_process(stack: RunningStack, *args: str) -> subprocess.CompletedProcess[str]:
    """``memstream maintain ARGS`` as an operator runs it, checked for its exit status."""
    result = subprocess.run(
        [sys.executable, "-m", "ops", "maintain", *args],
        env={**os.environ, **settings_env(stack.settings)}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def maintain(stack: RunningStack, *args: str) -> list[dict[str, Any]]:
    reports: list[dict[str, Any]] = orjson.loads(maintain_process(stack, *args).stdout)
    return reports


async def test_a_dry_run_says_what_it_checked_and_why_nothing_would_happen(stack: RunningStack, tenant: str) -> None:
    """Issue 46: ``maintain --dry-run`` printed an empty report. It now counts what expiry would
    delete, names the rules in effect, and says on stderr why each step would do nothing."""
    await store_old_episodes(stack, tenant, "user-1", datetime.now(UTC) - timedelta(days=1), 2)
    result = maintain_process(stack, "--tenant", tenant, "--dry-run")
    [report] = orjson.loads(result.stdout)
    assert report["expired"] == {"episodes": 0, "facts": 0} and report["compacted"] == [] and report["forgotten"] == {}
    assert report["policy"]["compact_after_days_from"] == "deployment"
    assert all(report["policy"][rule] is None for rule in ("min_importance", "max_age_days", "max_per_user"))
    assert f"memstream maintain (dry run: nothing changed): tenant {tenant}" in result.stderr
    assert "no retention rule is set for this tenant" in result.stderr
    assert "no user has a day of" in result.stderr and report["notes"] == [
        line.strip() for line in result.stderr.splitlines() if line.startswith("  ")
    ]


async def test_compaction_replaces_a_day_with_a_summary_and_the_log_shows_it(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    day = (datetime.now(UTC) - timedelta(days=40)).replace(hour=9, minute=0, second=0, microsecond=0)
    ids = await store_old_episodes(stack, tenant, "user-1", day, 4)
    recent = await store_old_episodes(stack, tenant, "user-1", datetime.now(UTC) - timedelta(days=1), 2)
    dry = maintain(stack, "--tenant", tenant, "--dry-run")
    assert dry[0]["compacted"] == [
        {"user_id": "user-1", "day": day.date().isoformat(), "agent_id": "agent-1", "shared": False, "episodes": 4}
    ]
    [report] = maintain(stack, "--tenant", tenant)
    summary_id = report["compacted"][0]["summary_event_id"]
    with stack.db(tenant) as conn:
        rows = dict(conn.execute(
            "SELECT event_id::text, archived_into::text FROM episodes WHERE archived_at IS NOT NULL").fetchall())  # fmt: skip
        summary = conn.execute(
            "SELECT memory_type, content, importance FROM episodes WHERE event_id = %s", (summary_id,)
        ).fetchone()
        logged = conn.execute(
            "SELECT role, source_topic, metadata->>'kind', metadata->>'archived' FROM event_log"
            " WHERE metadata->>'summary_event_id' = %s", (summary_id,)).fetchone()  # fmt: skip
        audited = conn.execute(
            "SELECT detail->>'archived' FROM audit_log WHERE action = 'memory.compaction'"
        ).fetchone()
    assert rows == {str(i): summary_id for i in ids}, "only the old day's episodes are archived, behind the summary"
    assert summary is not None and summary[0] == "summary" and "rotate the keys" in summary[1]
    assert abs(summary[2] - 0.43) < 1e-6, "a summary is as important as its most important episode"
    assert logged == ("system", "memstream.maintenance", "compaction", "4")
    assert audited == ("4",)
    # (the stored vectors are identical, so MMR would rightly keep one: switch it off here)
    params = {"user_id": "user-1", "q": "rotate the keys", "mmr": "false"}
    hits = (await gateway.get("/v1/search", params=params)).json()["hits"]
    served = {h["id"] for h in hits}
    assert summary_id in served and not served & {str(i) for i in ids} and served >= {str(i) for i in recent}
    assert maintain(stack, "--tenant", tenant)[0]["compacted"] == [], "compaction is done once"


async def test_a_day_is_compacted_per_agent_so_each_summary_is_seen_by_who_saw_its_originals(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    day = (datetime.now(UTC) - timedelta(days=40)).replace(hour=9, minute=0, second=0, microsecond=0)
    await store_old_episodes(stack, tenant, "user-1", day, 3, agent="agent-x")
    await store_old_episodes(stack, tenant, "user-1", day + timedelta(hours=1), 3, agent="agent-y")
    await store_old_episodes(stack, tenant, "user-1", day + timedelta(hours=2), 2, agent="agent-y", shared=True)
    [report] = maintain(stack, "--tenant", tenant)
    groups = {(c["agent_id"], c["shared"]): c["episodes"] for c in report["compacted"]}
    assert groups == {("agent-x", False): 3, ("agent-y", False): 3, ("agent-y", True): 2}
    params = {"user_id": "user-1", "q": "rotate the keys", "memory_types": "summary", "mmr": "false"}
    for agent, sees in (("agent-x", {("agent-x", False), ("agent-y", True)}),
                        ("agent-y", {("agent-y", False), ("agent-y", True)})):  # fmt: skip
        async with client_for(gateway_app, stack.key(tenant, agent=agent, scopes=("read",))) as client:
            hits = (await client.get("/v1/search", params=params)).json()["hits"]
        with stack.db(tenant) as conn:
            shared = dict(conn.execute("SELECT event_id::text, shared FROM episodes WHERE memory_type = 'summary'"))
        assert {(h["agent_id"], shared[h["id"]]) for h in hits} == sees, agent


async def test_expired_rows_are_never_served_and_then_swept(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    await post_turns(gateway, [turn(tenant, "s1", "I prefer light mode for this project demo.", project_id="Demo"),
                               turn(tenant, "s1", "temporary note about nothing in particular")])  # fmt: skip
    await facts_settled(gateway, "user-1", 1)
    # The facts come from the memory worker's consumer group: the ingest worker may not have stored both turns yet.
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 2)
    with stack.owner_db(tenant) as conn:
        conn.execute("UPDATE facts SET expires_at = now() - interval '1 second'")
        conn.execute("UPDATE episodes SET expires_at = now() - interval '1 second'")
    assert await current_facts(gateway, "user-1", all="true") == []
    hits = (await gateway.get("/v1/search", params={"user_id": "user-1", "q": "light mode temporary note"})).json()
    assert hits["hits"] == []
    [report] = maintain(stack, "--tenant", tenant, "--no-compact", "--no-forget")
    assert report["expired"]["facts"] >= 1 and report["expired"]["episodes"] == 2
    with stack.db(tenant) as conn:
        assert conn.execute("SELECT count(*) FROM episodes").fetchone() == (0,)


async def test_retention_policy_dry_run_then_forgetting(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    old = await store_old_episodes(stack, tenant, "user-1", datetime.now(UTC) - timedelta(days=400), 3)
    fresh = await store_old_episodes(stack, tenant, "user-1", datetime.now(UTC) - timedelta(hours=1), 5)
    policy = {"max_age_days": 365, "max_per_user": 4, "decay_half_life_days": 30, "min_importance": 0.001}
    assert (await gateway.put("/v1/tenant/retention", json=policy)).status_code == 200
    preview = (await gateway.get("/v1/tenant/retention/preview")).json()
    assert set(preview["would_forget"]) >= {str(i) for i in old}
    assert preview["by_rule"]["max_age_days"] == 3 and preview["by_rule"]["max_per_user"] == 4
    kept_by_quota = {str(i) for i in fresh} - set(preview["would_forget"])
    assert len(kept_by_quota) == 4, "the four highest decayed scores stay"
    with stack.db(tenant) as conn:
        assert conn.execute("SELECT count(*) FROM episodes").fetchone() == (8,), "a dry run forgets nothing"
    [report] = maintain(stack, "--tenant", tenant, "--no-compact")
    assert sorted(report["forgotten_ids"]) == sorted(preview["would_forget"])
    with stack.db(tenant) as conn:
        left = {r[0] for r in conn.execute("SELECT event_id::text FROM episodes")}
        audited = conn.execute("SELECT detail->>'count' FROM audit_log WHERE action = 'memory.forget'").fetchone()
    assert left == kept_by_quota and audited == (str(len(preview["would_forget"])),)


async def test_relative_time_is_rewritten_to_session_ids(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    start = datetime.now(UTC) - timedelta(days=2)
    await post_turns(gateway, [turn(tenant, "sess-41", "hello", event_time=start.isoformat())])
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1)  # the previous session is on record
    await post_turns(gateway, [turn(tenant, "sess-42", "Last session we chose Valkey as the cache.",
                                    event_time=(start + timedelta(days=1)).isoformat())])  # fmt: skip

    async def rewritten() -> bool:
        facts = by_subject(await current_facts(gateway, "user-1"))
        return "sess-41" in facts.get(("global", None, "cache"), {}).get("summary", "")

    await eventually(rewritten, timeout_s=60)
