"""Lawful erasure: the user's memory is gone from every table, vector and buffer (skills
included), the audit log keeps only that it happened, and re-sending the user's events (a
replay of the topic, a redelivery, a retry with the original ids and no time or a future
time, a replay of the log) cannot bring them back. Until an operator records renewed
consent, nothing new of the user is stored either."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import redis
from aiokafka import AIOKafkaProducer

from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from sinks.postgres.erasure import user_ref
from sinks.redis.keys import buffer_key
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, count_rows, counts, post_turns, turn
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
    # The same statement twice: a merge, whose audit record once carried the fact's text.
    same = f"{ERASED} said {SECRET_WORDS} again: I prefer dark mode, {SECRET_WORDS} edition."
    turns[2]["content"] = turns[4]["content"] = same
    turns[4]["session_id"] = turns[2]["session_id"]  # one partition: applied in order, so the second merges
    await post_turns(gateway, turns)
    outcome = {
        "agent_id": "agent-1",
        "user_id": ERASED,
        "session_id": "e-ops",
        "skill": f"{SECRET_WORDS} deploy",
        "status": "failure",
        "feedback": f"{SECRET_WORDS} broke",
        "steps": [f"{SECRET_WORDS} step"],
    }
    assert (await gateway.post("/v1/tool-events", json=outcome)).status_code == 202
    # Episodes: + the tool turn and its lesson; the event log (written concurrently) too, for the erasure's counts.
    await eventually(lambda: counts(stack, tenant) == (8, 7))

    async def facts_stored() -> bool:
        response = await gateway.get("/v1/entities", params={"user_id": ERASED})
        return len(response.json()["facts"]) >= 1

    await eventually(facts_stored, timeout_s=60)

    def merged() -> bool:
        with stack.db(tenant) as conn:
            return conn.execute("SELECT count(*) FROM audit_log WHERE action = 'memory.merge'").fetchone() != (0,)

    await eventually(merged, timeout_s=60)
    client = redis.Redis.from_url(stack.settings.require_redis_url())
    erased_sessions = sorted({str(t["session_id"]) for t in turns if t["user_id"] == ERASED})
    # The buffer stage may finish after the Postgres sinks; the erasure counts the tool event's buffer too.
    await eventually(lambda: all(client.exists(buffer_key(tenant, ERASED, s)) for s in [*erased_sessions, "e-ops"]))

    async def skill_recorded() -> bool:
        found = await gateway.get("/v1/skills/best", params={"user_id": ERASED, "task": "deploy"})
        return bool(found.json()["skills"])

    await eventually(skill_recorded, timeout_s=60)

    response = await gateway.post(f"/v1/users/{ERASED}/erase")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["episodes"], body["events"], body["sessions"], body["buffers"]) == (5, 4, 3, 3)

    def leftovers() -> list[str]:
        return tables_containing(stack, [SECRET_WORDS, ERASED])

    assert leftovers() == []
    assert not any(client.exists(buffer_key(tenant, ERASED, s)) for s in erased_sessions)
    assert (await gateway.get("/v1/skills/best", params={"user_id": ERASED, "task": "deploy"})).json()["skills"] == []
    search = await gateway.get("/v1/search", params={"user_id": ERASED, "q": SECRET_WORDS})
    assert search.json()["hits"] == []
    assert (await gateway.get("/v1/entities", params={"user_id": ERASED, "all": "true"})).json()["facts"] == []
    kept = await gateway.get("/v1/search", params={"user_id": KEPT, "q": "kept turn"})
    assert len(kept.json()["hits"]) == 3, "other users are untouched"

    # The audit log says that an erasure happened, and nothing of what was erased.
    with stack.db(tenant) as conn:
        subject, detail = conn.execute(  # type: ignore[misc]
            "SELECT subject, detail FROM audit_log WHERE action = 'user.erase'"
        ).fetchone()
    assert subject == user_ref(tenant, ERASED) and (detail["episodes"], detail["skills"]) == (5, 1)

    # A replay: the same events again, through the gateway and straight onto the topic; the
    # same ids again with no time (the gateway stamps "now") and with a time in the future.
    await post_turns(gateway, [t for t in turns if t["user_id"] == ERASED])
    await post_turns(gateway, [{**t, "event_time": None} for t in turns if t["user_id"] == ERASED])
    soon = (datetime.now(UTC) + timedelta(minutes=4)).isoformat()
    await post_turns(gateway, [{**t, "event_time": soon} for t in turns if t["user_id"] == ERASED])
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
    assert not any(client.exists(buffer_key(tenant, ERASED, s)) for s in erased_sessions)

    # New turns of the erased user are not remembered either, until renewed consent...
    await post_turns(gateway, [turn(tenant, "fresh", f"{SECRET_WORDS} before consent", user_id=ERASED)])
    marker = turn(tenant, "s1", "second marker", user_id=KEPT)
    await post_turns(gateway, [marker])
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 5)
    assert leftovers() == []
    given = await gateway.post(f"/v1/users/{ERASED}/consent")
    assert given.status_code == 200 and given.json()["after_erasure"] is True
    # ... after which a new conversation is a new start; the erased ids stay forgotten.
    await post_turns(gateway, [turn(tenant, "fresh", "hello again", user_id=ERASED)])
    await post_turns(gateway, [{**t, "event_time": None} for t in turns if t["user_id"] == ERASED])
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 6)
    await post_turns(gateway, [turn(tenant, "s1", "third marker", user_id=KEPT)])
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 7)
    assert tables_containing(stack, [SECRET_WORDS]) == [], "the erased turns did not come back"
    with stack.db(tenant) as conn:
        actions = [r[0] for r in conn.execute("SELECT action FROM audit_log WHERE action LIKE 'user.%' ORDER BY seq")]
    assert actions == ["user.erase", "user.consent"]
    client.close()
