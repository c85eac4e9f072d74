"""Erasure is ordered by when memstream received a turn, never by the time a client wrote in
it (issue 45, finding 4).

An attacker paused both workers, posted a turn with ``event_time`` 4.5 minutes ahead, had the
user erased and consent recorded a second later: when the workers caught up, the turn was
stored (dated in the future), because every sink compared the consent with ``event_time``.
Now a turn is forgotten unless memstream *received* it after the consent: the record's time
(``Turn.received_at``), kept by the event log for replays.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import psycopg
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pgvector.psycopg import register_vector_async

from memstream.extraction.types import Triple
from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import Turn, turn_key
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.erasure import forgotten
from sinks.postgres.event_log import append_events
from sinks.postgres.facts import FactRecord, apply_facts
from sinks.postgres.tenancy import act_as
from sinks.redis.event_claims import EventClaims
from sinks.redis.keys import event_claim_key
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, post_turns, turn
from tests.integration.test_privacy import redis_containing, tables_containing

# --- the attack, end to end: both workers behind ------------------------------------------------


async def test_a_turn_received_before_an_erasure_stays_forgotten_however_it_is_dated(
    stack: RunningStack,
    worker: WorkerHandle,
    memory_worker: WorkerHandle,
    running_memory_worker: WorkerHandle,
    gateway: httpx.AsyncClient,
    tenant: str,
) -> None:
    user, secret = "erased-ahead", f"kumquat-{uuid.uuid4().hex[:8]}"
    ahead = datetime.now(UTC) + timedelta(minutes=4, seconds=30)
    memory_worker.stop()
    worker.stop()
    try:
        # Received while both workers are behind: by the gateway, dated ahead; straight onto the
        # topic, dated ahead; and by the gateway with no time at all (the control that held).
        await post_turns(
            gateway,
            [
                turn(
                    tenant, "s-ahead", f"I prefer dark mode, {secret} one", user_id=user, event_time=ahead.isoformat()
                ),
                turn(tenant, "s-ahead", f"{secret} two", user_id=user),
            ],
        )
        codec = turn_event_codec()
        producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
        await producer.start()
        try:
            record = avro_record(tenant, f"{secret} three", session="s-direct", user_id=user, event_time=ahead)
            await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s-direct"), value=codec.encode(record))
        finally:
            await producer.stop()
        assert (await gateway.post(f"/v1/users/{user}/erase")).status_code == 200
        assert (await gateway.post(f"/v1/users/{user}/consent")).json()["after_erasure"] is True
        # Received after the consent, dated in the past: remembered (the door is open again).
        long_ago = (datetime.now(UTC) - timedelta(days=3)).isoformat()
        await post_turns(gateway, [turn(tenant, "s-after", "a fresh start", user_id=user, event_time=long_ago)])
    finally:
        worker.start()
        memory_worker.start()

    def stored() -> list[str]:
        with stack.db(tenant) as conn:
            rows = conn.execute("SELECT content FROM event_log WHERE user_id = %s ORDER BY seq", (user,)).fetchall()
        return [str(r[0]) for r in rows]

    await eventually(lambda: stored() == ["a fresh start"], timeout_s=60)

    def episodes() -> int:
        with stack.db(tenant) as conn:
            row = conn.execute("SELECT count(*) FROM episodes WHERE user_id = %s", (user,)).fetchone()
        return int(row[0]) if row else 0

    await eventually(lambda: episodes() == 1, timeout_s=60)
    assert tables_containing(stack, [secret]) == []
    assert redis_containing(stack, [secret]) == []
    facts = (await gateway.get("/v1/entities", params={"user_id": user, "all": "true"})).json()["facts"]
    assert all(secret not in str(f) and "dark" not in str(f).lower() for f in facts), facts


# --- a second red team: a retry after the consent of a turn received before the erasure ----------


async def test_a_retry_after_the_consent_of_a_turn_received_before_it_stays_forgotten(
    stack: RunningStack,
    worker: WorkerHandle,
    memory_worker: WorkerHandle,
    running_memory_worker: WorkerHandle,
    gateway: httpx.AsyncClient,
    tenant: str,
) -> None:
    """Skipped by the workers, the turn was never stored, so the erasure had not recorded its
    id, and the same id posted again after the consent was stored. Now a retry is dated by its
    first attempt (the gateway's claim), and a skipped event is tombstoned by its id: so it holds
    also when the claim is gone (a retry after it expired) and for a turn produced straight onto
    the topic again."""
    user, secret = "erased-retry", f"quince-{uuid.uuid4().hex[:8]}"
    before = turn(tenant, "s-retry", f"I prefer dark mode, {secret} before", user_id=user, event_id=str(uuid.uuid4()))
    between = turn(tenant, "s-retry", f"{secret} between", user_id=user, event_id=str(uuid.uuid4()))
    direct = avro_record(tenant, f"{secret} direct", session="s-retry", user_id=user)
    codec = turn_event_codec()
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
    await producer.start()

    async def produce(record: dict[str, Any]) -> None:
        await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s-retry"), value=codec.encode(record))

    async def kept(text: str) -> None:
        """A turn of another user in the same session (so the same partition, after the others)."""
        await post_turns(gateway, [turn(tenant, "s-retry", text, user_id="kept-user")])

        def logged() -> bool:
            with stack.db(tenant) as conn:
                return conn.execute("SELECT 1 FROM event_log WHERE content = %s", (text,)).fetchone() is not None

        await eventually(logged, timeout_s=60)

    try:
        memory_worker.stop()
        worker.stop()
        try:
            await post_turns(gateway, [before])
            await produce(direct)
            assert (await gateway.post(f"/v1/users/{user}/erase")).status_code == 200
            await post_turns(gateway, [between])
        finally:
            worker.start()
            memory_worker.start()
        await kept("the workers are past the erased user's turns")
        assert (await gateway.post(f"/v1/users/{user}/consent")).json()["after_erasure"] is True
        # The retries: by the gateway with its claim, by the gateway after the claim expired, and
        # the same record straight onto the topic again (a new Kafka time, the same event id).
        await post_turns(gateway, [{**before, "event_time": None}])
        stack.redis().delete(event_claim_key(tenant, str(between["event_id"])))
        await post_turns(gateway, [{**between, "event_time": None}])
        await produce(direct)
        await post_turns(gateway, [turn(tenant, "s-retry", "a fresh start after consent", user_id=user)])
        await kept("the workers are past the retries")
    finally:
        await producer.stop()

    def stored() -> list[str]:
        with stack.db(tenant) as conn:
            rows = conn.execute("SELECT content FROM event_log WHERE user_id = %s ORDER BY seq", (user,)).fetchall()
        return [str(r[0]) for r in rows]

    await eventually(lambda: stored() == ["a fresh start after consent"], timeout_s=60)
    assert tables_containing(stack, [secret]) == []
    assert redis_containing(stack, [secret]) == []


# --- the class: any event time, any lag, every sink ---------------------------------------------

#: When memstream received the turn, against the erasure and the consent that follow it.
ARRIVALS = ("before the erasure", "between erasure and consent", "after the consent", "unknown")


async def connect(stack: RunningStack) -> psycopg.AsyncConnection[Any]:
    conn = await psycopg.AsyncConnection.connect(stack.settings.require_database_url())
    await register_vector_async(conn)
    return conn


def received(arrival: str, erased_at: datetime, consented_at: datetime) -> datetime | None:
    return {
        "before the erasure": erased_at - timedelta(milliseconds=1),
        "between erasure and consent": erased_at + (consented_at - erased_at) / 2,
        "after the consent": consented_at + timedelta(milliseconds=1),
        "unknown": None,
    }[arrival]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    arrival=st.sampled_from(ARRIVALS),
    dated=st.timedeltas(min_value=timedelta(days=-3650), max_value=timedelta(minutes=10)),
)
@example(arrival="before the erasure", dated=timedelta(minutes=4, seconds=30))
@example(arrival="after the consent", dated=timedelta(days=-30))
async def test_every_sink_stores_a_turn_exactly_when_it_was_received_after_the_consent(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, arrival: str, dated: timedelta
) -> None:
    """The sinks run after both the erasure and the consent (the most a worker can lag), for a
    turn dated anywhere from ten years back to ten minutes ahead of now."""
    user = f"u-{uuid.uuid4().hex[:10]}"
    erased = await gateway.post(f"/v1/users/{user}/erase")
    consent = await gateway.post(f"/v1/users/{user}/consent")
    erased_at = datetime.fromisoformat(erased.json()["erased_at"])
    consented_at = datetime.fromisoformat(consent.json()["consented_at"])
    at = received(arrival, erased_at, consented_at)
    t = Turn(
        event_id=uuid.uuid4(), tenant_id=tenant, agent_id="a", user_id=user, project_id=None, session_id="s",
        role="user", content="I prefer dark mode.", event_time=datetime.now(UTC) + dated, received_at=at,
    )  # fmt: skip
    fact = FactRecord(
        fact_id=uuid.uuid4(), tenant_id=tenant, user_id=user, agent_id="a", session_id="s", project_id=None,
        source_event_id=t.event_id, observed_at=t.event_time, entity="theme", category="preference", scope="global",
        summary="theme: dark", importance=0.5, triples=(Triple(user, "prefers", "dark mode"),), shared=False,
        extractor="test", embedding=np.full(4, 0.5, dtype=np.float32), received_at=at,
    )  # fmt: skip
    async with await connect(stack) as conn:
        logged = await append_events(conn, [t])
        kept = await upsert_episodes(conn, [Episode(t, np.full(4, 0.5, dtype=np.float32), 4)], model="test/m@4")
        applied = await _apply(conn, tenant, fact)
        async with conn.transaction():
            await act_as(conn, tenant, actor="worker")
            left_out = await forgotten(conn, tenant, [(t.event_id, user, at)])  # the buffer's and skills' check
    remembered = arrival == "after the consent"
    assert (logged.get(tenant) == [t.event_id]) is remembered, (arrival, dated)
    assert (kept.get(tenant) == [t.event_id]) is remembered, (arrival, dated)
    assert applied is remembered, (arrival, dated)
    assert (t.event_id not in left_out) is remembered, (arrival, dated)


async def _apply(conn: psycopg.AsyncConnection[Any], tenant: str, fact: FactRecord) -> bool:
    """Whether the facts sink stored the fact."""
    async with conn.transaction():
        await act_as(conn, tenant, actor="worker")
        results = await apply_facts(conn, [fact], model="test/m@4", merge_threshold=0.9)
    [result] = results
    return result.action not in ("erased", "forgotten")


async def test_a_retry_is_received_when_its_first_attempt_was(stack: RunningStack, tenant: str) -> None:
    """The gateway's claim keeps the first attempt's receipt, and a retry is published with it."""
    client = aioredis.Redis.from_url(stack.settings.require_redis_url())
    claims = EventClaims(client, ttl_s=60)
    record = turn(tenant, "s", "hello", event_id=str(uuid.uuid4()), event_time=datetime.now(UTC))
    first, later = datetime(2026, 12, 1, 9, 0, tzinfo=UTC), datetime(2026, 12, 1, 9, 5, tzinfo=UTC)
    try:
        assert (await claims.claim(tenant, [dict(record)], received_at=first)).received_at == [first]
        fresh = turn(tenant, "s", "new", event_id=str(uuid.uuid4()), event_time=datetime.now(UTC))
        again = await claims.claim(tenant, [dict(record), fresh], received_at=later)
        assert again.refused == [] and again.received_at == [first, later]
        other = await claims.claim(tenant, [{**record, "content": "another turn"}], received_at=later)
        assert other.refused == [0]
    finally:
        await client.aclose()
