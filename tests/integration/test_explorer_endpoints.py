"""The memory explorer's reads on the real stack — ``/v1/whoami``, ``/v1/users``,
``/v1/memories``, ``/v1/skills``, ``/v1/audit`` — attacked as well as used: each answers only
what the key may see (its tenant; with an agent's key, that agent's own and shared memory, in
lists and in counts), needs its scope, walks its pages once each even while rows arrive between
them, refuses cursors it did not give out, and matches a search's ``%`` and ``_`` literally.

Most memory is written straight through the sinks (fast, exact times); one test goes through
the gateway and both workers, for where a memory came from (topic, partition, offset)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest
from fastapi import FastAPI
from pgvector.psycopg import register_vector_async

from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.maintenance import compaction_record_id
from sinks.postgres.skills import SkillRun, derived_skill_id, record_run
from sinks.postgres.tenancy import act_as
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.helpers import post_turns, turn
from tests.integration.test_long_term_memory import maintain, store_old_episodes

MODEL = "wordllama/l2_supercat@256"
VECTOR = np.full(256, 1 / 16, dtype=np.float32)
NOW = datetime.now(UTC).replace(microsecond=0)
LISTS = ("/v1/users", "/v1/memories", "/v1/skills", "/v1/audit")

Json = dict[str, Any]


async def store(
    stack: RunningStack,
    tenant: str,
    user: str,
    times: list[datetime],
    *,
    agent: str = "agent-a",
    shared: bool = False,
    session: str = "s1",
    project: str | None = None,
) -> list[str]:
    """Episodes written as the episode sink writes them (no worker), one per time."""
    turns = [
        Turn(event_id=uuid.uuid4(), tenant_id=tenant, agent_id=agent, shared=shared, user_id=user, project_id=project,
             session_id=session, role="user", content=f"note {i} of {user} by {agent}", event_time=at)
        for i, at in enumerate(times)
    ]  # fmt: skip
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        await upsert_episodes(conn, [Episode(t, VECTOR, 5) for t in turns], model=MODEL)
    return [str(t.event_id) for t in turns]


async def record_skills(
    stack: RunningStack,
    tenant: str,
    user: str,
    outcomes: list[tuple[str, bool, str | None]],
    *,
    agent: str = "agent-a",
    shared: bool = False,
) -> None:
    """(skill, success, feedback) outcomes, counted as the procedures stage counts them."""
    async with await psycopg.AsyncConnection.connect(stack.settings.require_database_url()) as conn:
        await register_vector_async(conn)
        async with conn.transaction():
            await act_as(conn, tenant, actor="test")
            for i, (skill, success, feedback) in enumerate(outcomes):
                run = SkillRun(tenant, uuid.uuid4(), user, agent, shared, skill, success, feedback, [f"step {i}"],
                               NOW - timedelta(hours=1) + timedelta(minutes=i))  # fmt: skip
                await record_run(conn, run, embedding=VECTOR, model=MODEL)


async def get(client: httpx.AsyncClient, path: str, **params: Any) -> Json:
    response = await client.get(path, params={k: v for k, v in params.items() if v is not None})
    assert response.status_code == 200, response.text
    body: Json = response.json()
    return body


async def walk(
    client: httpx.AsyncClient,
    path: str,
    items: str,
    *,
    between: Callable[[int], Awaitable[None]] | None = None,
    **params: Any,
) -> list[Json]:
    """Every item of every page, in order; ``between(n)`` runs after the n-th page."""
    found: list[Json] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await get(client, path, cursor=cursor, **params)
        found += page[items]
        pages += 1
        if page["next_cursor"] is None:
            return found
        assert page[items], "a page with a next cursor holds rows"
        cursor = page["next_cursor"]
        if between is not None:
            await between(pages)


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


# --- who the key is -------------------------------------------------------------------------


async def test_whoami_names_the_key_for_any_scope(stack: RunningStack, gateway_app: FastAPI, tenant: str) -> None:
    admin = stack.key(tenant)
    ingest_only = stack.key(tenant, agent="agent-a", scopes=("ingest",))
    async with client_for(gateway_app, admin) as a, client_for(gateway_app, ingest_only) as b:
        assert await get(a, "/v1/whoami") == {
            "tenant_id": tenant, "key_id": admin.split("_", 2)[1], "agent_id": None, "scopes": ["admin", "ingest", "read"],
        }  # fmt: skip
        assert await get(b, "/v1/whoami") == {
            "tenant_id": tenant, "key_id": ingest_only.split("_", 2)[1], "agent_id": "agent-a", "scopes": ["ingest"],
        }  # fmt: skip
        error(await b.get("/v1/whoami", params={"agent_id": "agent-b"}), 403, "wrong_agent")
        error(await a.get("/v1/whoami", params={"tenant_id": "someone-else"}), 403, "wrong_tenant")
        assert admin.split("_", 2)[2] not in (await a.get("/v1/whoami")).text, "never the secret"
    async with client_for(gateway_app, None) as anonymous:
        error(await anonymous.get("/v1/whoami"), 401, "unauthorized")


# --- users ----------------------------------------------------------------------------------


async def test_users_are_listed_with_what_each_key_may_see(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    """A user only agent-b's private memory holds is unknown to agent-a; a user both hold is
    counted, and last seen, as each key sees them."""
    base = NOW - timedelta(days=1)
    await store(stack, tenant, "alice", [base, base + timedelta(minutes=1)], agent="agent-a")
    await store(stack, tenant, "bob-private", [base + timedelta(minutes=2)], agent="agent-b")
    await store(stack, tenant, "carol-shared", [base + timedelta(minutes=3)], agent="agent-b", shared=True)
    await store(stack, tenant, "mixed", [base, base + timedelta(minutes=1)], agent="agent-a")
    await store(stack, tenant, "mixed", [base + timedelta(minutes=5)], agent="agent-b", shared=True)
    await store(stack, tenant, "mixed", [base + timedelta(minutes=9)] * 3, agent="agent-b")
    await record_skills(stack, tenant, "skills-only-b", [("deploy", True, None)], agent="agent-b")
    keys = {who: stack.key(tenant, agent=who, scopes=("read",)) for who in ("agent-a", "agent-b")}
    async with (
        client_for(gateway_app, stack.key(tenant, scopes=("read",))) as whole,
        client_for(gateway_app, keys["agent-a"]) as a,
        client_for(gateway_app, keys["agent-b"]) as b,
    ):
        everyone = {u["user_id"]: u for u in (await get(whole, "/v1/users"))["users"]}
        assert list(everyone) == ["alice", "bob-private", "carol-shared", "mixed", "skills-only-b"]
        assert (everyone["mixed"]["episodes"], everyone["skills-only-b"]["episodes"]) == (6, 0)
        assert when(everyone["mixed"]["last_seen"]) == base + timedelta(minutes=9)
        assert everyone["skills-only-b"]["last_seen"] is None

        seen_by_a = {u["user_id"]: u for u in (await get(a, "/v1/users"))["users"]}
        assert list(seen_by_a) == ["alice", "carol-shared", "mixed"], "no user only agent-b's private memory holds"
        assert seen_by_a["mixed"]["episodes"] == 3, "agent-b's private episodes are not counted for agent-a"
        assert when(seen_by_a["mixed"]["last_seen"]) == base + timedelta(minutes=5), "nor is its last_seen"
        seen_by_b = {u["user_id"]: u for u in (await get(b, "/v1/users"))["users"]}
        assert list(seen_by_b) == ["bob-private", "carol-shared", "mixed", "skills-only-b"]
        assert seen_by_b["mixed"]["episodes"] == 4

        # A tenant-level key may look as an agent does; an agent's key only as itself.
        assert (await get(whole, "/v1/users", agent_id="agent-a"))["users"] == list(seen_by_a.values())
        error(await a.get("/v1/users", params={"agent_id": "agent-b"}), 403, "wrong_agent")


async def test_a_user_search_matches_its_text_literally_and_case_insensitively(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    for user in ("a_b", "axb", "AXB-2", "crm:Alice@example", "bob"):
        await store(stack, tenant, user, [NOW - timedelta(hours=1)])

    async def found(q: str) -> list[str]:
        return [u["user_id"] for u in (await get(gateway, "/v1/users", q=q))["users"]]

    assert await found("a_b") == ["a_b"], "_ is not a wildcard"
    assert await found("_") == ["a_b"]
    assert await found("%") == [], "% is not a wildcard"
    assert await found("a%b") == []
    assert await found("\\") == []
    assert await found("axb") == ["AXB-2", "axb"], "case-insensitive"
    assert await found("ALICE@") == ["crm:Alice@example"], "anywhere in the id"
    error(await gateway.get("/v1/users", params={"q": ""}), 422, "invalid_request")


async def test_users_walk_every_page_once_while_users_arrive(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    originals = [f"u-{i:02d}" for i in range(10)]
    for user in originals:
        await store(stack, tenant, user, [NOW - timedelta(hours=2)])

    async def newcomers(page: int) -> None:  # one before the cursor, two after it
        await store(stack, tenant, f"u-00-new-{page}", [NOW])
        await store(stack, tenant, f"u-05-new-{page}", [NOW])
        await store(stack, tenant, f"u-99-new-{page}", [NOW])

    seen = [u["user_id"] for u in await walk(gateway, "/v1/users", "users", between=newcomers, limit=3)]
    assert len(seen) == len(set(seen)), "no user twice"
    assert seen == sorted(seen), "in id order"
    assert set(originals) <= set(seen), "no user missed"
    assert "u-99-new-1" in seen and "u-00-new-1" not in seen, "a newcomer after the cursor is seen, before it not"


# --- memories -------------------------------------------------------------------------------


async def test_memories_walk_newest_first_once_each_while_memories_arrive(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """Ten times, and five episodes sharing one time (ties broken by id across pages)."""
    start = NOW - timedelta(days=2)
    originals = await store(stack, tenant, "alice", [start + timedelta(minutes=i) for i in range(10)])
    originals += await store(stack, tenant, "alice", [start + timedelta(minutes=4, seconds=30)] * 5)
    arrived: list[str] = []

    async def more(page: int) -> None:  # older than any cursor, newer than all, and in between
        for at in (start - timedelta(days=1), NOW, start + timedelta(minutes=4, seconds=30)):
            arrived.extend(await store(stack, tenant, "alice", [at]))

    seen = await walk(gateway, "/v1/memories", "memories", between=more, user_id="alice", limit=4)
    ids = [m["id"] for m in seen]
    assert len(ids) == len(set(ids)), "no memory twice"
    assert set(originals) <= set(ids), "no memory missed"
    keys = [(when(m["created_at"]), m["id"]) for m in seen]
    assert keys == sorted(keys, reverse=True), "newest first, then by id"
    assert arrived[0] in ids, "an older newcomer is reached"

    [memory] = (await get(gateway, "/v1/memories", user_id="alice", limit=1, until=(start + timedelta(minutes=1)).isoformat()))["memories"]  # fmt: skip
    assert {k: memory[k] for k in ("memory_type", "archived", "archived_at", "archived_into", "role", "agent_id")} == {
        "memory_type": "episodic", "archived": False, "archived_at": None, "archived_into": None, "role": "user",
        "agent_id": "agent-a",
    }  # fmt: skip
    assert memory["id"] == originals[0] and memory["session_id"] == "s1" and memory["shared"] is False
    assert memory["source"] == {
        "event_id": originals[0],
        "topic": None,
        "partition": None,
        "offset": None,
        "produced_by": None,
    }, "written past Kafka: no log position"


async def test_memories_filters_and_agents(stack: RunningStack, gateway_app: FastAPI, tenant: str) -> None:
    start = NOW - timedelta(days=1)
    own = await store(stack, tenant, "u1", [start], agent="agent-a", session="s1", project="P1")
    shared = await store(
        stack, tenant, "u1", [start + timedelta(minutes=1)], agent="agent-b", shared=True, session="s2"
    )
    private_b = await store(stack, tenant, "u1", [start + timedelta(minutes=2)], agent="agent-b", session="s2")
    other_user = await store(stack, tenant, "u2", [start], agent="agent-a")
    async with (
        client_for(gateway_app, stack.key(tenant)) as whole,
        client_for(gateway_app, stack.key(tenant, agent="agent-a", scopes=("read",))) as a,
        client_for(gateway_app, stack.key(f"{tenant}-other")) as stranger,
    ):

        async def ids(client: httpx.AsyncClient, **params: Any) -> list[str]:
            return [m["id"] for m in (await get(client, "/v1/memories", user_id="u1", **params))["memories"]]

        assert await ids(whole) == private_b + shared + own
        assert await ids(a) == shared + own, "agent-b's private memory is not agent-a's to see"
        assert await ids(whole, agent_id="agent-a") == shared + own
        error(await a.get("/v1/memories", params={"user_id": "u1", "agent_id": "agent-b"}), 403, "wrong_agent")
        assert await ids(stranger) == [] and (await get(stranger, "/v1/users"))["users"] == []
        assert await ids(whole, session_id="s2") == private_b + shared
        assert await ids(whole, project_id="P1") == own
        assert await ids(whole, since=(start + timedelta(minutes=1)).isoformat()) == private_b + shared
        assert await ids(whole, until=(start + timedelta(minutes=1)).isoformat()) == own
        assert await ids(whole, memory_type="summary,procedural") == []
        assert other_user[0] not in await ids(whole)
        error(await whole.get("/v1/memories", params={"user_id": "u1", "since": "2026-01-01T00:00:00"}),
              422, "invalid_request")  # fmt: skip

        # Forgotten memory is gone from the timeline (and from the counts).
        assert (await whole.delete(f"/v1/memories/{shared[0]}")).status_code == 200
        assert await ids(whole) == private_b + own
        assert await ids(a) == own
        [u1] = [u for u in (await get(a, "/v1/users"))["users"] if u["user_id"] == "u1"]
        assert u1["episodes"] == 1


async def test_archived_originals_are_marked_and_a_summary_names_its_summariser(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    day = (datetime.now(UTC) - timedelta(days=40)).replace(hour=9, minute=0, second=0, microsecond=0)
    originals = {str(i) for i in await store_old_episodes(stack, tenant, "user-1", day, 4)}
    [report] = maintain(stack, "--tenant", tenant, "--no-forget", "--no-expire")
    summary_id = report["compacted"][0]["summary_event_id"]
    timeline = (await get(gateway, "/v1/memories", user_id="user-1"))["memories"]
    summary, *archived = timeline
    assert (summary["id"], summary["memory_type"], summary["archived"]) == (summary_id, "summary", False)
    assert summary["source"]["event_id"] == str(compaction_record_id(uuid.UUID(summary_id)))
    assert summary["source"]["topic"] == "memstream.maintenance" and summary["source"]["produced_by"]
    assert (summary["source"]["partition"], summary["source"]["offset"]) == (None, None)
    assert {m["id"] for m in archived} == originals
    assert all(m["archived"] and m["archived_into"] == summary_id and m["archived_at"] for m in archived)
    live = (await get(gateway, "/v1/memories", user_id="user-1", include_archived="false"))["memories"]
    assert [m["id"] for m in live] == [summary_id]
    [user] = (await get(gateway, "/v1/users"))["users"]
    assert user["episodes"] == 1, "counts are of live episodes"


async def test_where_a_memory_came_from_through_the_workers(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """A turn's source is its own event at its Kafka position; a lesson's, the failed tool
    outcome it was drawn from; the skill's record counts the outcome."""
    [said] = await post_turns(gateway, [turn(tenant, "s1", "Deploy with rsync, please.", user_id="pat")])
    tool_event = {"agent_id": "agent-1", "user_id": "pat", "session_id": "s1", "skill": "deploy",
                  "status": "failure", "feedback": "scp timed out; use rsync", "steps": ["build", "scp"]}  # fmt: skip
    response = await gateway.post("/v1/tool-events", json=tool_event)
    assert response.status_code == 202, response.text
    [outcome] = response.json()["event_ids"]

    async def remembered() -> dict[str, Json] | None:
        found = {m["memory_type"] + ":" + m["role"]: m for m in (await get(gateway, "/v1/memories", user_id="pat"))["memories"]}  # fmt: skip
        ready = {"episodic:user", "episodic:tool", "procedural:tool"} <= set(found)
        return found if ready and all(m["source"]["offset"] is not None for m in found.values()) else None

    await eventually(remembered, timeout_s=60)
    found = await remembered()
    assert found is not None
    turn_source, tool_source = found["episodic:user"]["source"], found["episodic:tool"]["source"]
    assert turn_source["event_id"] == said and turn_source["topic"] == "memstream.turns.v1"
    assert turn_source["partition"] >= 0 and turn_source["offset"] >= 0 and turn_source["produced_by"] is None
    lesson = found["procedural:tool"]
    assert lesson["source"] == tool_source and tool_source["event_id"] == outcome
    assert "use rsync" in lesson["content"]

    [skill] = (await get(gateway, "/v1/skills", user_id="pat"))["skills"]
    assert {k: skill[k] for k in ("name", "attempts", "successes", "success_rate", "last_feedback", "steps")} == {
        "name": "deploy", "attempts": 1, "successes": 0, "success_rate": 0.0,
        "last_feedback": "scp timed out; use rsync", "steps": ["build", "scp"],
    }  # fmt: skip


# --- skills ---------------------------------------------------------------------------------


async def test_skills_walk_by_name_once_each_with_what_the_key_may_see(
    stack: RunningStack, gateway_app: FastAPI, tenant: str
) -> None:
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    await record_skills(stack, tenant, "u1", [(n, True, None) for n in names] + [("bravo", False, "too slow")])
    await record_skills(stack, tenant, "u1", [("bravo", True, "fine"), ("hotel", True, None)], agent="agent-b")
    await record_skills(stack, tenant, "u1", [("charlie", False, "shared advice")], agent="agent-b", shared=True)
    async with (
        client_for(gateway_app, stack.key(tenant)) as whole,
        client_for(gateway_app, stack.key(tenant, agent="agent-a", scopes=("read",))) as a,
    ):

        async def more(page: int) -> None:
            await record_skills(stack, tenant, "u1", [(f"aaa{page}", True, None), (f"zulu{page}", True, None)])

        seen = await walk(whole, "/v1/skills", "skills", between=more, user_id="u1", limit=3)
        order = [s["name"] for s in seen]
        assert len(order) == len(set(order)) and order == sorted(order)
        assert set(names) | {"hotel"} <= set(order) and "zulu1" in order and "aaa1" not in order
        bravo = next(s for s in seen if s["name"] == "bravo")
        assert (bravo["attempts"], bravo["successes"], bravo["last_feedback"]) == (3, 2, "too slow")
        assert bravo["success_rate"] == pytest.approx(2 / 3)
        assert bravo["skill_id"] == str(derived_skill_id(tenant, "u1", "bravo"))

        mine = {s["name"]: s for s in await walk(a, "/v1/skills", "skills", user_id="u1", limit=2)}
        assert "hotel" not in mine, "a skill only agent-b's private outcomes hold"
        assert (mine["bravo"]["attempts"], mine["bravo"]["successes"]) == (2, 1), "not agent-b's private outcome"
        assert (mine["charlie"]["attempts"], mine["charlie"]["last_feedback"]) == (2, "shared advice")


# --- the audit log --------------------------------------------------------------------------


async def evaluate(client: httpx.AsyncClient, command: str) -> None:
    response = await client.post(
        "/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": command}
    )
    assert response.status_code == 200, response.text


async def test_the_audit_log_walks_newest_first_once_each_without_secrets(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str
) -> None:
    for i in range(7):
        await evaluate(gateway, f"ls -la /srv/{i}")
    await evaluate(gateway, "mysql -pHunter2Secret42 -e 'select 1'")
    with stack.db(tenant) as conn:
        before = {str(r[0]) for r in conn.execute("SELECT audit_id FROM audit_log").fetchall()}

    async def more(page: int) -> None:
        await evaluate(gateway, f"echo page {page}")

    seen = await walk(gateway, "/v1/audit", "records", between=more, limit=3)
    ids = [r["audit_id"] for r in seen]
    assert len(ids) == len(set(ids)) and before <= set(ids)
    keys = [(when(r["at"]), r["seq"]) for r in seen]
    assert keys == sorted(keys, reverse=True), "newest first"
    page = await gateway.get("/v1/audit", params={"action": "permission.decision"})
    assert "Hunter2Secret42" not in page.text and "[REDACTED:" in page.text
    decisions = page.json()["records"]
    assert len(decisions) >= 8 and all(r["action"] == "permission.decision" for r in decisions)
    assert {r["action"] for r in (await get(gateway, "/v1/audit", action="permission."))["records"]} == {
        "permission.decision"
    }
    assert (await get(gateway, "/v1/audit", action="permission"))["records"] == [], "a prefix ends in a dot"
    assert {r["action"] for r in (await get(gateway, "/v1/audit", action="api_key.create"))["records"]} == {
        "api_key.create"
    }
    latest = seen[0]["at"]  # (records were added after it, while the pages were read)
    assert when((await get(gateway, "/v1/audit", since=latest))["records"][-1]["at"]) == when(latest)
    assert all(when(r["at"]) < when(latest) for r in (await get(gateway, "/v1/audit", until=latest))["records"])


async def test_the_audit_log_by_user_and_who_may_read_it(
    stack: RunningStack, gateway_app: FastAPI, gateway: httpx.AsyncClient, tenant: str
) -> None:
    [doomed] = await store(stack, tenant, "dora", [NOW - timedelta(hours=1)])
    await store(stack, tenant, "eve", [NOW - timedelta(hours=1)])
    assert (await gateway.delete(f"/v1/memories/{doomed}")).status_code == 200
    assert (await gateway.post("/v1/users/eve/erase")).status_code == 200
    [forgotten] = (await get(gateway, "/v1/audit", user_id="dora"))["records"]
    assert (forgotten["action"], forgotten["subject"]) == ("memory.delete", doomed)
    assert [r["action"] for r in (await get(gateway, "/v1/audit", user_id="eve"))["records"]] == ["user.erase"]
    assert (await get(gateway, "/v1/audit", user_id="nobody"))["records"] == []

    other = f"{tenant}-x"
    async with (
        client_for(gateway_app, stack.key(other)) as stranger,
        client_for(gateway_app, stack.key(tenant, scopes=("read", "ingest"))) as reader,
        client_for(gateway_app, stack.key(tenant, agent="agent-a", scopes=("admin", "read"))) as agent_admin,
    ):
        theirs = {r["audit_id"] for r in await walk(stranger, "/v1/audit", "records")}
        ours = {r["audit_id"] for r in await walk(gateway, "/v1/audit", "records")}
        assert theirs and not theirs & ours, "never another tenant's records"
        assert {r["action"] for r in await walk(stranger, "/v1/audit", "records")} == {"api_key.create"}
        error(await reader.get("/v1/audit"), 403, "missing_scope")
        error(await agent_admin.get("/v1/audit"), 403, "tenant_key_required")


# --- what every list refuses ----------------------------------------------------------------


@pytest.mark.parametrize("path", LISTS)
async def test_every_list_refuses_what_it_did_not_give_out(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, path: str
) -> None:
    await store(stack, tenant, "u1", [NOW - timedelta(minutes=i) for i in range(3)])
    await store(stack, tenant, "u2", [NOW])
    await record_skills(stack, tenant, "u1", [("alpha", True, None), ("bravo", True, None)])
    base = {} if path in ("/v1/users", "/v1/audit") else {"user_id": "u1"}
    first = await get(gateway, path, limit=1, **base)
    assert first["next_cursor"] is not None
    others = [p for p in LISTS if p != path]
    foreign = (await get(gateway, others[0], limit=1, **({} if others[0] in ("/v1/users", "/v1/audit") else {"user_id": "u1"})))["next_cursor"]  # fmt: skip
    assert foreign is not None
    for cursor in ("garbage!", "Zm9v", "A", foreign, first["next_cursor"][:-2], "x" * 600):
        error(await gateway.get(path, params={**base, "cursor": cursor}), 422,
              "invalid_request" if cursor in ("garbage!", "x" * 600) else "invalid_cursor")  # fmt: skip
    for limit in ("0", "201", "-1", "ten"):
        error(await gateway.get(path, params={**base, "limit": limit}), 422, "invalid_request")
    if path in ("/v1/memories", "/v1/audit"):  # a time is ISO 8601 with a timezone, never a number of seconds
        for time in ("0.5", "1700000000", "2026-01-01T00:00:00", "yesterday"):
            error(await gateway.get(path, params={**base, "until": time}), 422, "invalid_request")
    error(await gateway.get(path, params={**base, "cursor": "abc\x00"}), 422, "invalid_request")


@pytest.mark.parametrize("path", ["/v1/users", "/v1/memories", "/v1/skills"])
async def test_reading_memory_needs_the_read_scope(
    stack: RunningStack, gateway_app: FastAPI, tenant: str, path: str
) -> None:
    async with client_for(gateway_app, stack.key(tenant, agent="agent-a", scopes=("ingest",))) as writer:
        error(await writer.get(path, params={"user_id": "u1"}), 403, "missing_scope")
        assert (await writer.get("/v1/whoami")).status_code == 200
    async with client_for(gateway_app, None) as anonymous:
        error(await anonymous.get(path, params={"user_id": "u1"}), 401, "unauthorized")
