"""The synchronous SDK (``memstream_client.Memstream``) against a real gateway process over
HTTP (uvicorn, as deployed) on the embedded stack: every resource once, the gateway's
refusals as the SDK's exceptions, and a publish whose answer is lost stored exactly once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from memstream_client import (
    AuthenticationError,
    Memstream,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from memstream_client.models import Turn
from tests.fixtures.stack import RunningStack, Served, WorkerHandle, serve_gateway
from tests.integration.sdk_helpers import (
    AGENT,
    PROJECT,
    LoseFirstTurnsAnswer,
    one_turn,
    rows_with_content,
    seed_turns,
    stored,
    wait_until,
)


@pytest.fixture(scope="module")
def served(stack: RunningStack) -> Iterator[Served]:
    with serve_gateway(stack, "gateway-sdk") as gateway:
        yield gateway


@pytest.fixture
def client(served: Served, api_key: str) -> Iterator[Memstream]:
    with Memstream(served.url, api_key) as memstream:
        yield memstream


def test_published_turns_are_searchable_in_context_and_in_the_buffer(
    client: Memstream, running_worker: WorkerHandle
) -> None:
    accepted = client.turns.publish(seed_turns("u1", "s1"))
    assert accepted.accepted == len(seed_turns("u1", "s1")) and len(set(accepted.event_ids)) == accepted.accepted

    def found() -> list[str]:
        hits = client.search("u1", "dark mode editor", k=5, memory_types=["episodic"]).hits
        return [h.content for h in hits if "dark mode" in h.content]

    assert wait_until(found)
    scoped = client.search("u1", "backend database", project_id=PROJECT, decay=False, mmr=False)
    assert scoped.hits and all(h.project_id in (PROJECT, None) for h in scoped.hits)
    context = client.context.get("u1", "Which theme do I like?", session_id="s1", budget=800)
    assert "dark mode" in context.prompt and context.tokens <= context.budget == 800
    buffer = client.sessions.buffer("s1", user_id="u1")
    assert buffer.turns and buffer.turns[-1].event_id in accepted.event_ids


def test_long_term_memory_entities_graph_and_skills(client: Memstream, running_memory_worker: WorkerHandle) -> None:
    client.turns.publish([Turn.model_validate(t) for t in seed_turns("u2", "s1")])
    for status in ("success", "success", "failure"):
        client.tool_events.record(
            {"agent_id": AGENT, "user_id": "u2", "session_id": "ops", "skill": "deploy", "status": status,
             "steps": ["build", "rsync dist/", "restart"], "feedback": "dist was empty" if status == "failure" else None}
        )  # fmt: skip
    facts = wait_until(lambda: client.entities.list("u2").facts)
    history = client.entities.history(facts[0].entity, user_id="u2")
    assert history.facts and history.facts[-1].entity == facts[0].entity
    # The project's facts may land in a later extraction batch than the first user fact.
    assert wait_until(lambda: client.entities.list("u2", scope="project", project_id=PROJECT).facts)
    graph = wait_until(lambda: client.graph.neighbors("CloudRetail", depth=2, user_id="u2").neighbors)
    assert any(n.entity == "fastapi" for n in graph)

    def deploy_counted() -> bool:
        skills = client.skills.best("u2", "deploy the release", k=3).skills
        return any(s.name == "deploy" and s.attempts == 3 for s in skills)

    assert wait_until(deploy_counted)
    deploy = next(s for s in client.skills.best("u2", "deploy the release").skills if s.name == "deploy")
    assert (deploy.successes, deploy.last_feedback) == (2, "dist was empty")


def test_permissions_and_rules(client: Memstream) -> None:
    rule = client.rules.create(tool="shell", effect="BLOCK", pattern=r"\brm -rf\b", description="never")
    assert [r.rule_id for r in client.rules.list().rules] == [rule.rule_id]
    assert client.rules.list(tool="kubectl").rules == []
    blocked = client.permissions.evaluate(session_id="s1", tool="shell", command="rm -rf /tmp/x")
    assert (blocked.decision, blocked.tier, blocked.rule_id) == ("BLOCK", "global", rule.rule_id)
    command = "terraform apply"
    assert client.permissions.evaluate(session_id="s1", tool="shell", command=command).decision == "PENDING"
    grant = client.permissions.allow_once(session_id="s1", tool="shell", command=command)
    allowed = client.permissions.evaluate(session_id="s1", tool="shell", command=command)
    assert (allowed.decision, allowed.tier, allowed.grant_id) == ("ALLOW", "allow_once", grant.grant_id)
    assert client.permissions.evaluate(session_id="s1", tool="shell", command=command).decision == "PENDING"
    assert client.rules.delete(rule.rule_id) is None
    assert client.rules.list().rules == []
    with pytest.raises(NotFoundError) as missing:
        client.rules.delete(rule.rule_id)
    assert missing.value.code == "not_found" and missing.value.request_id


def test_tenant_settings_round_trip(client: Memstream) -> None:
    tenant = client.tenant
    assert tenant.privacy.set(redact_email=True).redact_email is True
    assert (tenant.privacy.get().redact_email, tenant.privacy.get().redact_phone) == (True, False)
    tenant.retention.set(max_age_days=365, decay_half_life_days=30.0)
    retention = tenant.retention.get()
    assert (retention.max_age_days, retention.decay_half_life_days, retention.compact_after_days) == (365, 30.0, None)
    preview = tenant.retention.preview()
    assert preview.policy.max_age_days == 365 and preview.would_forget == []
    tenant.ranking.set(vector_weight=1.0, text_weight=0.5, half_life_days=14.0)
    ranking = tenant.ranking.get()
    assert (ranking.vector_weight, ranking.text_weight, ranking.half_life_days) == (1.0, 0.5, 14.0)
    assert "simple" in tenant.text_search.get().available
    changed = tenant.text_search.set(config="simple")
    assert (changed.config, changed.effective) == ("simple", "simple")
    assert tenant.text_search.set(config=None).config is None


def test_erase_and_consent(client: Memstream, stack: RunningStack, tenant: str, running_worker: WorkerHandle) -> None:
    accepted = client.turns.publish([one_turn("gone", "s1", "remember me"), one_turn("gone", "s2", "and me")])
    wait_until(lambda: all(stored(stack, tenant, event_id) for event_id in accepted.event_ids))
    erasure = client.users.erase("gone")
    assert (erasure.episodes, erasure.sessions) == (2, 2)
    consent = client.users.consent("gone")
    assert consent.after_erasure is True


def test_forget_one_memory(client: Memstream, stack: RunningStack, tenant: str, running_worker: WorkerHandle) -> None:
    event_id = client.turns.publish(one_turn("u5", "s1", "forget me")).event_ids[0]
    wait_until(lambda: stored(stack, tenant, event_id))
    forgotten = client.memories.delete(event_id)
    assert (forgotten.kind, forgotten.id, forgotten.memory_type, forgotten.repeated) == (
        "episode", event_id, "episodic", False,
    )  # fmt: skip
    assert not stored(stack, tenant, event_id) and client.memories.delete(event_id).repeated is True
    with pytest.raises(NotFoundError):
        client.memories.delete(uuid.uuid4())


def test_refusals_are_the_sdks_exceptions(served: Served, stack: RunningStack, tenant: str, client: Memstream) -> None:
    with pytest.raises(ValidationError) as invalid:
        client.search("u1", "anything", k=1000)
    assert invalid.value.status_code == 422 and invalid.value.code == "invalid_request"
    assert [e["loc"] for e in invalid.value.errors] == [["query", "k"]]
    with pytest.raises(ValidationError) as bad_turn:
        client.turns.publish(one_turn("not a user id", "s1", "hello"))
    assert bad_turn.value.code == "invalid_turn" and ["turns", "0", "user_id"] in [
        e["loc"] for e in bad_turn.value.errors
    ]
    with Memstream(served.url, stack.key(tenant, scopes=("read",))) as reader:
        with pytest.raises(PermissionDeniedError) as denied:
            reader.turns.publish(one_turn("u1", "s1", "hello"))
        assert (denied.value.status_code, denied.value.code) == (403, "missing_scope")
        assert "'ingest' scope" in denied.value.message and denied.value.request_id
    with Memstream(served.url, "msk_0000000000000000_" + "x" * 43) as stranger:
        with pytest.raises(AuthenticationError) as unknown:
            stranger.rules.list()
        assert (unknown.value.status_code, unknown.value.code) == (401, "unauthorized")


def test_a_publish_whose_answer_is_lost_is_stored_once(
    served: Served, stack: RunningStack, tenant: str, api_key: str, running_worker: WorkerHandle
) -> None:
    content = f"the answer to this turn is lost on the way back {uuid.uuid4().hex}"
    transport = LoseFirstTurnsAnswer(httpx.HTTPTransport())
    with httpx.Client(transport=transport) as http, Memstream(served.url, api_key, http_client=http) as client:
        accepted = client.turns.publish(one_turn("u1", "lossy", content))
        assert len(transport.sent) == 2 and transport.sent[0] == transport.sent[1], "the retry repeats the event id"
        # A later turn of the same session is consumed after both copies (one partition, in order).
        later = client.with_options(max_retries=0).turns.publish(one_turn("u1", "lossy", "a later turn"))
    wait_until(lambda: stored(stack, tenant, later.event_ids[0]))
    assert stored(stack, tenant, accepted.event_ids[0])
    assert rows_with_content(stack, tenant, content) == (1, 1), "stored exactly once"
