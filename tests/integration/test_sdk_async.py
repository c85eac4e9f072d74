"""The asyncio SDK (``memstream_client.AsyncMemstream``) against the real gateway app
in-process (``httpx.ASGITransport``) on the embedded stack: every resource once, the
gateway's refusals as the SDK's exceptions, and a publish whose answer is lost stored once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from memstream_client import (
    AsyncMemstream,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.sdk_helpers import (
    AGENT,
    PROJECT,
    AsyncLoseFirstTurnsAnswer,
    one_turn,
    rows_with_content,
    seed_turns,
    stored,
)


@pytest_asyncio.fixture(loop_scope="session")
async def client(gateway_app: FastAPI, api_key: str) -> AsyncIterator[AsyncMemstream]:
    async with client_for(gateway_app, None) as http, AsyncMemstream(api_key=api_key, http_client=http) as memstream:
        yield memstream


async def test_published_turns_are_searchable_in_context_and_in_the_buffer(
    client: AsyncMemstream, running_worker: WorkerHandle
) -> None:
    accepted = await client.turns.publish(seed_turns("u1", "s1"))
    assert accepted.accepted == len(accepted.event_ids) == len(set(accepted.event_ids))

    async def found() -> bool:
        hits = (await client.search("u1", "dark mode editor", k=5, memory_types=["episodic"])).hits
        return any("dark mode" in h.content for h in hits)

    await eventually(found, timeout_s=60)
    scoped = await client.search("u1", "backend database", project_id=PROJECT, scopes=["project", "global"])
    assert scoped.hits and all(h.project_id in (PROJECT, None) for h in scoped.hits)
    context = await client.context.get("u1", "Which theme do I like?", session_id="s1", budget=800)
    assert "dark mode" in context.prompt and context.tokens <= context.budget == 800

    async def buffered() -> bool:  # the buffer stage may finish after the episodes stage
        return bool((await client.sessions.buffer("s1", user_id="u1")).turns)

    await eventually(buffered, timeout_s=60)
    buffer = await client.sessions.buffer("s1", user_id="u1")
    assert buffer.turns and buffer.turns[-1].event_id in accepted.event_ids


async def test_long_term_memory_entities_graph_and_skills(
    client: AsyncMemstream, running_memory_worker: WorkerHandle
) -> None:
    await client.turns.publish(seed_turns("u2", "s1"))
    for status in ("success", "failure"):
        await client.tool_events.record(
            {"agent_id": AGENT, "user_id": "u2", "session_id": "ops", "skill": "deploy", "status": status,
             "steps": ["build", "restart"], "feedback": "forgot to build" if status == "failure" else None}
        )  # fmt: skip

    async def facts() -> bool:
        return bool((await client.entities.list("u2")).facts)

    await eventually(facts, timeout_s=60)
    fact = (await client.entities.list("u2")).facts[0]
    assert (await client.entities.history(fact.entity, user_id="u2")).facts

    async def two_hops() -> bool:
        found = (await client.graph.neighbors("CloudRetail", depth=2, direction="out", user_id="u2")).neighbors
        return any(n.entity == "alloydb" and n.depth == 2 for n in found)

    await eventually(two_hops, timeout_s=60)

    async def deploy_counted() -> bool:
        skills = (await client.skills.best("u2", "deploy the release")).skills
        return any(s.name == "deploy" and (s.attempts, s.successes) == (2, 1) for s in skills)

    await eventually(deploy_counted, timeout_s=60)


async def test_permissions_and_rules(client: AsyncMemstream) -> None:
    rule = await client.rules.create(project_id=PROJECT, tool="shell", effect="ALLOW", pattern=r"^pytest\b", position=1)
    assert (await client.rules.list()).rules == [rule]
    allowed = await client.permissions.evaluate(session_id="s1", project_id=PROJECT, tool="shell", command="pytest -q")
    assert (allowed.decision, allowed.tier, allowed.rule_id) == ("ALLOW", "project", rule.rule_id)
    grant = await client.permissions.allow_once(session_id="s1", tool="shell", command="make deploy", agent_id=AGENT)
    once = await client.permissions.evaluate(session_id="s1", tool="shell", command="make deploy", agent_id=AGENT)
    assert (once.decision, once.grant_id) == ("ALLOW", grant.grant_id) and grant.expires_in_s > 0
    await client.rules.delete(str(rule.rule_id))
    with pytest.raises(NotFoundError):
        await client.rules.delete(rule.rule_id)


async def test_tenant_settings_round_trip(client: AsyncMemstream) -> None:
    tenant = client.tenant
    assert (await tenant.privacy.set(redact_phone=True)).redact_phone is True
    assert (await tenant.privacy.get()).model_dump() == {"redact_email": False, "redact_phone": True}
    await tenant.retention.set(compact_after_days=7, min_importance=0.2)
    assert (await tenant.retention.get()).model_dump() == {
        "compact_after_days": 7, "min_importance": 0.2, "max_age_days": None, "max_per_user": None,
        "unaccessed_days": None, "decay_half_life_days": None,
    }  # fmt: skip
    assert (await tenant.retention.preview()).policy.compact_after_days == 7
    await tenant.ranking.set(text_weight=0.0)
    assert (await tenant.ranking.get()).text_weight == 0.0
    text = await tenant.text_search.set(config="german")
    assert (text.config, text.effective) == ("german", "german")
    assert (await tenant.text_search.get()).config == "german"


async def test_erase_and_consent(
    client: AsyncMemstream, stack: RunningStack, tenant: str, running_worker: WorkerHandle
) -> None:
    accepted = await client.turns.publish(one_turn("gone", "s1", "remember me"))
    await eventually(lambda: stored(stack, tenant, accepted.event_ids[0]), timeout_s=60)
    erasure = await client.users.erase("gone")
    assert (erasure.episodes, erasure.events, erasure.sessions) == (1, 1, 1)
    assert (await client.users.consent("gone")).after_erasure is True


async def test_forget_one_memory(
    client: AsyncMemstream, stack: RunningStack, tenant: str, running_worker: WorkerHandle
) -> None:
    accepted = await client.turns.publish(one_turn("u5", "s1", "forget me"))
    event_id = accepted.event_ids[0]
    await eventually(lambda: stored(stack, tenant, event_id), timeout_s=60)
    forgotten = await client.memories.delete(event_id)
    assert (forgotten.kind, forgotten.id, forgotten.repeated, forgotten.buffer_turns) == ("episode", event_id, False, 1)
    assert not stored(stack, tenant, event_id)
    again = await client.memories.delete(str(event_id))  # what a retry after a lost answer gets
    assert again.repeated is True and again.forgotten_at == forgotten.forgotten_at
    with pytest.raises(NotFoundError) as missing:
        await client.memories.delete(uuid.uuid4())
    assert missing.value.code == "not_found"


async def lossy_publish(gateway_app: FastAPI, api_key: str, content: str) -> tuple[uuid.UUID, uuid.UUID]:
    """Publish ``content`` through a transport that loses the first answer (the SDK retries),
    then a later turn of the same session, which is consumed after both copies (one
    partition, in order). The two event ids."""
    transport = AsyncLoseFirstTurnsAnswer(httpx.ASGITransport(app=gateway_app))
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://gateway") as http,
        AsyncMemstream(api_key=api_key, http_client=http) as client,
    ):
        accepted = await client.turns.publish(one_turn("u1", "lossy", content))
        assert len(transport.sent) == 2 and transport.sent[0] == transport.sent[1], "the retry repeats the event id"
        later = await client.turns.publish(one_turn("u1", "lossy", "a later turn"))
    return accepted.event_ids[0], later.event_ids[0]


async def test_a_publish_whose_answer_is_lost_is_stored_once(
    gateway_app: FastAPI, stack: RunningStack, tenant: str, api_key: str, running_worker: WorkerHandle
) -> None:
    content = f"the answer to this turn is lost on the way back {uuid.uuid4().hex}"
    first, later = await lossy_publish(gateway_app, api_key, content)
    await eventually(lambda: stored(stack, tenant, later), timeout_s=60)
    assert stored(stack, tenant, first)
    assert rows_with_content(stack, tenant, content) == (1, 1), "stored exactly once"


async def test_a_publish_whose_answer_is_lost_is_buffered_once(
    gateway_app: FastAPI, stack: RunningStack, tenant: str, api_key: str, client: AsyncMemstream,
    running_worker: WorkerHandle,
) -> None:  # fmt: skip
    content = f"the answer to this turn is lost on the way back {uuid.uuid4().hex}"
    _, later = await lossy_publish(gateway_app, api_key, content)
    await eventually(lambda: stored(stack, tenant, later), timeout_s=60)
    buffered = [t.content for t in (await client.sessions.buffer("lossy", user_id="u1")).turns]
    assert buffered.count(content) == 1


async def test_refusals_are_the_sdks_exceptions(
    client: AsyncMemstream, gateway_app: FastAPI, stack: RunningStack, tenant: str
) -> None:
    with pytest.raises(ValidationError) as invalid:
        await client.graph.neighbors("x", depth=9)
    assert invalid.value.code == "invalid_request" and [e["loc"] for e in invalid.value.errors] == [["query", "depth"]]
    async with client_for(gateway_app, None) as http:
        reader = AsyncMemstream(api_key=stack.key(tenant, scopes=("read",)), http_client=http)
        with pytest.raises(PermissionDeniedError) as denied:
            await reader.tenant.privacy.set(redact_email=True)
        assert (denied.value.status_code, denied.value.code) == (403, "missing_scope") and denied.value.request_id
        bound = AsyncMemstream(api_key=stack.key(tenant, agent=AGENT), http_client=http)
        with pytest.raises(PermissionDeniedError) as agent_key:
            await bound.users.erase("u1")
        assert agent_key.value.code == "tenant_key_required"
        with pytest.raises(AuthenticationError) as revoked:
            await reader.with_options(api_key="msk_0000000000000000_" + "y" * 43).rules.list()
        assert (revoked.value.status_code, revoked.value.code) == (401, "unauthorized")
