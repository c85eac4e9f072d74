"""Retries: which failures are tried again (and which never are), how long the client waits,
that idempotent writes repeat their event ids, and per-call options."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from client_script import failure, ok
from memstream_client import (
    APIConnectionError,
    APITimeoutError,
    RateLimitError,
    UnavailableError,
)
from memstream_client.retries import RetryPolicy, parse_retry_after

TURN = {"agent_id": "a1", "user_id": "u1", "session_id": "s1", "role": "user", "content": "I prefer dark mode"}
ACCEPTED = {"accepted": 1, "event_ids": [str(uuid.uuid4())]}
RULES = {"rules": []}
RULE = {
    "rule_id": str(uuid.uuid4()), "project_id": None, "tool": "shell", "effect": "BLOCK", "pattern": "rm -rf",
    "position": 0, "description": "", "created_at": "2026-01-01T00:00:00Z",
}  # fmt: skip


def test_a_429_waits_the_retry_after_seconds_then_succeeds(sync_client, sleeps) -> None:
    client, script = sync_client(failure(429, "rate_limited", headers={"Retry-After": "3"}), ok(RULES))
    assert client.rules.list().rules == []
    assert sleeps == [3.0] and len(script.requests) == 2


def test_a_429_with_an_http_date_waits_until_then(sync_client, sleeps) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    client, script = sync_client(failure(429, headers={"Retry-After": when}), ok(RULES))
    client.rules.list()
    assert len(script.requests) == 2
    assert len(sleeps) == 1 and 3.5 <= sleeps[0] <= 5.0  # the date has whole seconds


def test_retry_after_in_both_forms() -> None:
    now = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
    assert parse_retry_after("7", now=now) == 7.0
    assert parse_retry_after("Tue, 01 Dec 2026 09:00:42 GMT", now=now) == 42.0
    assert parse_retry_after("Tue, 01 Dec 2026 08:00:00 GMT", now=now) == 0.0  # in the past: at once
    assert parse_retry_after("-3", now=now) == 0.0
    for unreadable in (None, "", "soon", "nan"):
        assert parse_retry_after(unreadable, now=now) is None


def test_a_retry_after_beyond_the_cap_is_raised_not_slept(sync_client, sleeps) -> None:
    client, script = sync_client(failure(429, "rate_limited", headers={"Retry-After": "3600"}))
    with pytest.raises(RateLimitError) as raised:
        client.rules.list()
    assert raised.value.retry_after == 3600.0 and sleeps == [] and len(script.requests) == 1


def test_a_503_then_success_sends_the_same_event_ids_again(sync_client, sleeps) -> None:
    client, script = sync_client(failure(503, "broker_unavailable", headers={"Retry-After": "2"}), ok(ACCEPTED))
    given = str(uuid.uuid4())
    client.turns.publish([TURN, {**TURN, "content": "and Python 3.11", "event_id": given}])
    first, second = script.bodies()
    assert first == second, "a retry sends the very same turns"
    ids = [t["event_id"] for t in first["turns"]]
    assert ids[1] == given and uuid.UUID(ids[0]).version == 4
    assert script.requests[0].content == script.requests[1].content
    assert sleeps == [2.0]


def test_a_tool_event_is_retried_with_its_event_id(sync_client) -> None:
    client, script = sync_client(httpx.ReadTimeout("slow"), failure(502), ok(ACCEPTED))
    client.tool_events.record(
        {"agent_id": "a1", "user_id": "u1", "session_id": "s1", "skill": "deploy", "status": "success"}
    )
    bodies = script.bodies()
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert uuid.UUID(bodies[0]["event_id"])


async def test_the_async_client_retries_a_publish_with_the_same_ids(async_client, sleeps) -> None:
    client, script = async_client(failure(503), httpx.ReadTimeout("slow"), ok(ACCEPTED))
    await client.turns.publish(TURN)
    bodies = script.bodies()
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert len(sleeps) == 2 and all(0 <= s < 8 for s in sleeps)


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.rules.create(tool="shell", effect="BLOCK", pattern="rm -rf"),
        lambda c: c.permissions.evaluate(session_id="s1", tool="shell", command="ls"),
        lambda c: c.permissions.allow_once(session_id="s1", tool="shell", command="ls"),
        lambda c: c.users.erase("u1"),
        lambda c: c.users.consent("u1"),
    ],
    ids=["rules.create", "permissions.evaluate", "permissions.allow_once", "users.erase", "users.consent"],
)
def test_a_write_that_is_not_idempotent_is_not_retried_once_it_may_have_arrived(sync_client, call) -> None:
    client, script = sync_client(failure(503, "postgres_unavailable"))
    with pytest.raises(UnavailableError):
        call(client)
    assert len(script.requests) == 1
    client, script = sync_client(httpx.ReadTimeout("lost"))
    with pytest.raises(APITimeoutError):
        call(client)
    assert len(script.requests) == 1


def test_a_write_that_is_not_idempotent_is_retried_when_nothing_was_done(sync_client, sleeps) -> None:
    """A 429 is refused before any work, and a failed connect sent nothing."""
    client, script = sync_client(
        failure(429, "rate_limited", headers={"Retry-After": "1"}), httpx.ConnectError("refused"), ok(RULE, status=201)
    )
    rule = client.rules.create(tool="shell", effect="BLOCK", pattern="rm -rf")
    assert rule.tool == "shell" and len(script.requests) == 3
    assert sleeps[0] == 1.0 and 0 <= sleeps[1] < 1.0  # the backoff of the second retry: at most 2 x 0.5 s


@pytest.mark.parametrize("status", [502, 503, 504])
def test_reads_are_retried_on_gateway_errors(sync_client, status) -> None:
    client, script = sync_client(failure(status), ok(RULES))
    client.rules.list()
    assert len(script.requests) == 2


def test_a_put_and_a_delete_are_retried_after_a_timeout(sync_client) -> None:
    client, script = sync_client(
        httpx.ReadTimeout("slow"), ok({"redact_email": True, "redact_phone": False}),
        httpx.RemoteProtocolError("dropped"), httpx.Response(204),
    )  # fmt: skip
    assert client.tenant.privacy.set(redact_email=True).redact_email is True
    assert client.rules.delete(uuid.uuid4()) is None
    assert [r.method for r in script.requests] == ["PUT", "PUT", "DELETE", "DELETE"]


def test_max_retries_is_respected(sync_client, sleeps) -> None:
    client, script = sync_client(*[failure(503)] * 4, max_retries=2)
    with pytest.raises(UnavailableError):
        client.rules.list()
    assert len(script.requests) == 3 and len(sleeps) == 2
    client, script = sync_client(httpx.ConnectError("refused"), max_retries=0)
    with pytest.raises(APIConnectionError):
        client.rules.list()
    assert len(script.requests) == 1


def test_with_options_changes_one_call_and_shares_the_connections(sync_client) -> None:
    client, script = sync_client(failure(503), failure(503), ok(RULES), max_retries=2)
    once = client.with_options(max_retries=0, timeout_s=1.5, api_key="msk_fedcba9876543210_othersecretothersecret")
    assert once._http is client._http and client.options.max_retries == 2
    with pytest.raises(UnavailableError):
        once.rules.list()
    assert len(script.requests) == 1
    sent = script.requests[0]
    assert sent.extensions["timeout"] == {"connect": 1.5, "read": 1.5, "write": 1.5, "pool": 1.5}
    assert sent.headers["authorization"] == "Bearer msk_fedcba9876543210_othersecretothersecret"
    client.rules.list()  # the original: its own key and retries
    assert len(script.requests) == 3 and script.requests[-1].headers["authorization"].startswith("Bearer msk_0123")
    assert script.requests[-1].extensions["timeout"]["read"] == 10.0


def test_the_backoff_has_full_jitter_up_to_its_cap() -> None:
    top = RetryPolicy(base_s=0.5, cap_s=8.0, jitter=lambda: 0.999999)
    assert [round(top.backoff_s(n), 3) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert RetryPolicy(jitter=lambda: 0.0).backoff_s(5) == 0.0
