"""The privacy filter: secrets never reach a table, the buffer or the broker (through the
gateway), and agents producing to Kafka directly get the same treatment from the worker."""

from __future__ import annotations

import httpx
import redis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, count_rows, turn

SECRETS = {
    "card_number": "4111 1111 1111 1111",
    "api_key": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "password": "hunter2-Correct-Horse",
    "national_id": "123-45-6789",
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----",
}
CONTENT = (
    f"pay with {SECRETS['card_number']}, key {SECRETS['api_key']}, token {SECRETS['github']},"
    f" password={SECRETS['password']}, ssn {SECRETS['national_id']}\n{SECRETS['private_key']}"
)
NEEDLES = [
    SECRETS["card_number"], "4111111111111111", SECRETS["api_key"], SECRETS["github"], SECRETS["password"],
    SECRETS["national_id"], "MIIEowIBAAKCAQEA7bq",
]  # fmt: skip


def tables_containing(stack: RunningStack, needles: list[str]) -> list[str]:
    """Every (table.column) of the public schema, of every tenant, holding any needle."""
    found = []
    with stack.superuser_db() as conn:  # the superuser bypasses row-level security
        conn.execute("SELECT 1")
        with conn.cursor() as cur:
            cur.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
                " AND data_type IN ('text', 'jsonb', 'ARRAY', 'character varying')"
            )
            columns = cur.fetchall()
        for table, column in columns:
            for needle in needles:
                query = f'SELECT count(*) FROM "{table}" WHERE "{column}"::text LIKE %s'  # noqa: S608
                row = conn.execute(query, (f"%{needle}%",)).fetchone()
                if row and row[0]:
                    found.append(f"{table}.{column}")
    return found


def redis_containing(stack: RunningStack, needles: list[str]) -> list[str]:
    client = redis.Redis.from_url(stack.settings.require_redis_url())
    try:
        hits = []
        for key in client.scan_iter(match="ms:buf:*"):
            for member in client.zrange(key, 0, -1):
                if any(n.encode() in member for n in needles):
                    hits.append(key.decode())
        return hits
    finally:
        client.close()


async def kafka_values(stack: RunningStack, topic: str) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=stack.settings.require_kafka(), group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=1500, max_records=100_000)
        return [r.value for records in batches.values() for r in records if r.value]
    finally:
        await consumer.stop()


async def test_secrets_posted_to_the_gateway_are_stored_nowhere(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    response = await gateway.post(
        "/v1/turns", json=turn(tenant, "s-secret", CONTENT, metadata={"env": f"AWS_KEY={SECRETS['api_key']}"})
    )
    assert response.status_code == 202
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 1)
    assert tables_containing(stack, NEEDLES) == []
    assert redis_containing(stack, NEEDLES) == []
    ours = [v for v in await kafka_values(stack, topics.TURNS) if tenant.encode() in v]
    assert ours and not any(n.encode() in v for v in ours for n in NEEDLES), "raw secrets reached Kafka"
    with stack.db(tenant) as conn:
        content, metadata = conn.execute("SELECT content, metadata FROM episodes").fetchone()  # type: ignore[misc]
    for kind in ("card_number", "api_key", "password", "national_id", "private_key"):
        assert f"[REDACTED:{kind}]" in content
    assert metadata == {"env": "AWS_KEY=[REDACTED:api_key]"}
    metrics = (await gateway.get("/metrics")).text
    assert 'memstream_redactions_total{kind="card_number",stage="gateway"}' in metrics


async def test_agents_producing_to_kafka_directly_are_filtered_by_the_worker(
    stack: RunningStack, running_worker: WorkerHandle, tenant: str
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
    await producer.start()
    try:
        record = avro_record(tenant, CONTENT, metadata={"note": f"card {SECRETS['card_number']}"})
        await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s1"), value=turn_event_codec().encode(record))
    finally:
        await producer.stop()
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1)
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 1)
    assert tables_containing(stack, NEEDLES) == []
    assert redis_containing(stack, NEEDLES) == []


async def test_email_and_phone_are_redacted_when_the_tenant_asks(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    text = "reach me at alice@example.com or +66 81 234 5678"
    await gateway.post("/v1/turns", json=turn(tenant, "s1", text))
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 1)  # stored under the old policy
    policy = await gateway.put("/v1/tenant/privacy", json={"redact_email": True, "redact_phone": True})
    assert policy.status_code == 200
    assert (await gateway.get("/v1/tenant/privacy")).json() == {"redact_email": True, "redact_phone": True}
    await gateway.post("/v1/turns", json=turn(tenant, "s1", text))
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 2)
    with stack.db(tenant) as conn:
        contents = [r[0] for r in conn.execute("SELECT content FROM episodes ORDER BY created_at")]
    assert contents == [text, "reach me at [REDACTED:email] or [REDACTED:phone]"]
