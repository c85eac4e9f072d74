"""Bad input is refused with a precise 4xx at the gateway, or dead-lettered by the worker
with its original bytes and the reason, and the worker goes on with the next good event."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, count_rows, post_turns, turn


def good(tenant: str, **extra: Any) -> dict[str, Any]:
    body = turn(tenant, "s1", "a perfectly fine turn")
    body.update(extra)
    return body


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b'{"tenant_id": "t", "content": ', 400, "not valid JSON"),
        (b"[1, 2, 3]", 422, "turn object"),
        (b'{"turns": []}', 422, "turns"),
    ],
)
async def test_malformed_bodies(gateway: httpx.AsyncClient, body: bytes, status: int, fragment: str) -> None:
    response = await gateway.post("/v1/turns", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert fragment in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"agent_id": None}, "agent_id is required"),
        ({"session_id": None}, "session_id"),
        ({"content": ""}, "content: must be a non-empty string"),
        ({"content": 42}, "content"),
        ({"role": "robot"}, "role"),
        ({"agent_id": "a b"}, "agent_id: must be 1-128 characters"),
        ({"event_time": "yesterday"}, "event_time must be an ISO 8601"),
        ({"event_time": "2026-11-30T09:00:00"}, "timezone"),
        ({"event_id": "not-a-uuid"}, "UUID"),
        ({"metadata": {"k": 1}}, "metadata"),
        ({"surprise": True}, "surprise"),
    ],
)
async def test_each_bad_field_gets_a_precise_422(
    gateway: httpx.AsyncClient, tenant: str, change: dict[str, Any], fragment: str
) -> None:
    body = good(tenant)
    for key, value in change.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    response = await gateway.post("/v1/turns", json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert fragment in error["message"]
    assert error["details"]


@pytest.mark.parametrize("claimed", ["someone-else", "a b", "t{1}"])
async def test_a_turn_naming_another_tenant_is_refused(gateway: httpx.AsyncClient, tenant: str, claimed: str) -> None:
    response = await gateway.post("/v1/turns", json=good(tenant, tenant_id=claimed))
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "wrong_tenant"


async def test_oversize_content_and_payload(stack: RunningStack, gateway: httpx.AsyncClient, tenant: str) -> None:
    limit = stack.settings.max_content_chars
    response = await gateway.post("/v1/turns", json=good(tenant, content="x" * (limit + 1)))
    assert response.status_code == 422
    assert f"the limit is {limit}" in response.json()["error"]["message"]

    huge = b'{"tenant_id": "' + b"x" * (stack.settings.max_body_bytes + 1) + b'"}'
    response = await gateway.post("/v1/turns", content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 413

    batch = {"turns": [good(tenant)] * (stack.settings.max_batch_turns + 1)}
    response = await gateway.post("/v1/turns", json=batch)
    assert response.status_code == 413
    assert "batch" in response.json()["error"]["message"]


async def test_not_json_is_415(gateway: httpx.AsyncClient) -> None:
    response = await gateway.post("/v1/turns", content=b"tenant=t", headers={"content-type": "text/plain"})
    assert response.status_code == 415


async def test_one_bad_turn_rejects_the_batch_and_nothing_is_published(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    response = await gateway.post("/v1/turns", json={"turns": [good(tenant), good(tenant, content="  ")]})
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["loc"] == ["turns", "1", "content"]
    await post_turns(gateway, [good(tenant, content="the marker after the rejected batch")])
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1)


async def test_reads_validate_their_parameters(gateway: httpx.AsyncClient, tenant: str) -> None:
    assert (await gateway.get("/v1/search", params={"tenant_id": tenant, "user_id": "u"})).status_code == 422
    assert (await gateway.get("/v1/search", params={"user_id": "u{", "q": "x"})).status_code == 422
    assert (
        await gateway.get("/v1/search", params={"tenant_id": tenant, "user_id": "u", "q": "x", "k": 0})
    ).status_code == 422
    assert (await gateway.get("/v1/sessions/s 1/buffer", params={"user_id": "u"})).status_code == 422
    assert (await gateway.get("/v1/sessions/s1/buffer", params={"user_id": "u u"})).status_code == 422
    # A tenant id that is not the key's is refused as such, whatever its shape.
    for other in ("t", "t{", "t t"):
        assert (
            await gateway.get("/v1/search", params={"tenant_id": other, "user_id": "u", "q": "x"})
        ).status_code == 403


async def dlq_records(stack: RunningStack, marker: bytes) -> list[Any]:
    consumer = AIOKafkaConsumer(
        topics.DLQ,
        bootstrap_servers=stack.settings.require_kafka(),
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        found = []
        batches = await consumer.getmany(timeout_ms=1000)
        for records in batches.values():
            found.extend(r for r in records if marker in (r.value or b""))
        return found
    finally:
        await consumer.stop()


async def test_undecodable_and_invalid_records_go_to_the_dlq_and_the_worker_goes_on(
    stack: RunningStack, running_worker: WorkerHandle, tenant: str
) -> None:
    codec = turn_event_codec()
    marker = uuid.uuid4().hex.encode()
    garbage = b"\x00\x00\x00\x00\x01" + marker  # our header, not a TurnEvent body
    not_avro = b'{"json": "' + marker + b'"}'
    invalid = avro_record("has{braces}", "bad tenant " + marker.decode())
    follower = avro_record(tenant, "the good one after the bad")

    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
    await producer.start()
    try:
        key = turn_key(tenant, "s1")
        for value in (garbage, not_avro, codec.encode(invalid), codec.encode(follower)):
            await producer.send_and_wait(topics.TURNS, key=key, value=value)
    finally:
        await producer.stop()

    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1, timeout_s=30)
    found: list[Any] = []

    async def three_dead_letters() -> bool:
        found[:] = await dlq_records(stack, marker)
        return len(found) == 3

    await eventually(three_dead_letters, timeout_s=30)
    by_value = {r.value: dict(r.headers) for r in found}
    assert set(by_value) == {garbage, not_avro, codec.encode(invalid)}
    assert b"corrupt Avro body" in by_value[garbage][topics.DLQ_REASON]
    assert b"magic byte" in by_value[not_avro][topics.DLQ_REASON]
    assert b"tenant_id must be" in by_value[codec.encode(invalid)][topics.DLQ_REASON]
    for headers in by_value.values():
        assert headers[topics.DLQ_SOURCE_TOPIC] == topics.TURNS.encode()
        assert int(headers[topics.DLQ_SOURCE_OFFSET]) >= 0
        assert headers[topics.DLQ_STAGE] == b"decode"


async def test_every_answer_names_its_request(gateway: httpx.AsyncClient) -> None:
    """``X-Request-Id``: the caller's own when well formed, else one the gateway makes."""
    echoed = await gateway.get("/v1/tenant/privacy", headers={"x-request-id": "agent-7:turn.42"})
    refused = await gateway.post("/v1/turns", content=b"{", headers={"content-type": "application/json"})
    odd = await gateway.get("/healthz", headers={"x-request-id": "no spaces allowed"})
    assert echoed.headers["x-request-id"] == "agent-7:turn.42"
    assert refused.status_code == 400 and len(refused.headers["x-request-id"]) == 32
    assert odd.headers["x-request-id"] != "no spaces allowed" and len(odd.headers["x-request-id"]) == 32
    assert refused.headers["x-request-id"] != odd.headers["x-request-id"]


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/search", {"user_id": "u1", "q": "x", "until": "0.5"}),
        ("/v1/search", {"user_id": "u1", "q": "x", "since": "1700000000"}),
        ("/v1/entities", {"user_id": "u1", "at": "12"}),
    ],
)
async def test_a_time_is_iso_8601_never_a_number(gateway: httpx.AsyncClient, path: str, params: dict[str, str]) -> None:
    """pydantic reads a number as seconds since 1970: a query's time must be ISO 8601."""
    response = await gateway.get(path, params=params)
    assert response.status_code == 422 and "ISO 8601" in response.json()["error"]["message"]
