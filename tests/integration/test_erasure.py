"""Lawful erasure: the user's memory is gone from every table, vector and buffer, the
audit log keeps only that it happened, and re-sending the user's events (a replay of the
topic, a redelivery, a replay of the log) cannot bring them back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import redis
from aiokafka import AIOKafkaProducer

from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from sinks.postgres.erasure import user_ref
from sinks.redis.buffer import buffer_key
from streams import topics
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, count_rows, post_turns, turn
from tests.integration.test_privacy import tables_containing

ERASED = "erase-me@example.com"
KEPT = "keep-me"
SECRET_WORDS = "zebra-umbrella-quartz"


def history(tenant: str) -> list[dict[str, object]]:
    start = datetime.now(UTC) - timedelta(minutes=5)
    turns = []
    for i in range(6):
        user = ERASED if i % 2 == 0 else KEPT
        session = f"{'e' if user == ERASED else 'k'}-session-{i % 3}"
        turns.append(
            turn(tenant, session, f"{user} said {SECRET_WORDS} number {i}" if user == ERASED else f"kept turn {i}",
                 user_id=user, event_id=str(uuid.uuid4()),
                 event_time=(start + timedelta(seconds=i)).isoformat())
        )  # fmt: skip
    return turns


async def test_an_erased_user_is_gone_and_stays_gone(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    turns = history(tenant)
    turns[0]["content"] += " I prefer dark mode and deploy with rsync."  # long-term memory too: facts
    await post_turns(gateway, turns)
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 6)

    async def facts_stored() -> bool:
        response = await gateway.get("/v1/entities", params={"user_id": ERASED})
        return len(response.json()["facts"]) >= 1

    await eventually(facts_stored, timeout_s=60)
    client = redis.Redis.from_url(stack.settings.require_redis_url())
    erased_sessions = sorted({str(t["session_id"]) for t in turns if t["user_id"] == ERASED})
    assert all(client.exists(buffer_key(tenant, s)) for s in erased_sessions)

    response = await gateway.post(f"/v1/users/{ERASED}/erase")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["episodes"], body["events"], body["sessions"], body["buffers"]) == (3, 3, 3, 3)

    def leftovers() -> list[str]:
        return tables_containing(stack, [SECRET_WORDS, ERASED])

    assert leftovers() == []
    assert not any(client.exists(buffer_key(tenant, s)) for s in erased_sessions)
    search = await gateway.get("/v1/search", params={"user_id": ERASED, "q": SECRET_WORDS})
    assert search.json()["hits"] == []
    assert (await gateway.get("/v1/entities", params={"user_id": ERASED})).json()["facts"] == []
    kept = await gateway.get("/v1/search", params={"user_id": KEPT, "q": "kept turn"})
    assert len(kept.json()["hits"]) == 3, "other users are untouched"

    # The audit log says that an erasure happened, and nothing of what was erased.
    with stack.db(tenant) as conn:
        subject, detail = conn.execute(  # type: ignore[misc]
            "SELECT subject, detail FROM audit_log WHERE action = 'user.erase'"
        ).fetchone()
    assert subject == user_ref(tenant, ERASED) and detail["episodes"] == 3

    # A replay: the same events again, through the gateway and straight onto the topic.
    await post_turns(gateway, [t for t in turns if t["user_id"] == ERASED])
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
    await producer.start()
    try:
        codec = turn_event_codec()
        for t in turns:
            if t["user_id"] != ERASED:
                continue
            record = avro_record(
                tenant, str(t["content"]), session=str(t["session_id"]), user_id=ERASED,
                event_id=str(uuid.uuid4()), event_time=datetime.fromisoformat(str(t["event_time"])),
            )  # fmt: skip
            await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, str(t["session_id"])),
                                         value=codec.encode(record))  # fmt: skip
        marker = avro_record(tenant, "marker after the replay", user_id=KEPT)
        await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s1"), value=codec.encode(marker))
    finally:
        await producer.stop()
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 4)  # 3 kept + the marker
    assert leftovers() == []
    assert not any(client.exists(buffer_key(tenant, s)) for s in erased_sessions)

    # A new conversation after the erasure is a new start, and is remembered.
    await post_turns(gateway, [turn(tenant, "fresh", "hello again", user_id=ERASED)])
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 5)
    client.close()
