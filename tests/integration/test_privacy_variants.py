"""The privacy filter on the real stack, with generated secrets in every field.

Turns carry secrets (a fixed draw of ``tests/strategies/secrets.py``, plus the security
finding's own examples) in their content, tags, tool name, metadata keys and values, and a
tool event carries them in its skill, feedback and steps. Once both workers have stored
them, no secret may be found anywhere: not in any text of any table (read as superuser,
past row-level security), not in any Redis key or value, not in the turns topic, not in
what search, context or the buffer answer. An identifier carrying a secret is refused with
a 422 that names the field.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import psycopg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from streams import topics
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import avro_record, count_rows, turn
from tests.integration.test_bad_input import dlq_records
from tests.strategies.secrets import ATTACKER_EXAMPLES, Secret, cases, disguised, leaks, pinned

CASES = ATTACKER_EXAMPLES + tuple(pinned(cases(), 24))
#: Short, one-line secrets for tags (64 characters), tool names and metadata keys (128).
ONE_LINE = [
    s
    for s in pinned(disguised(), 80)
    if "\n" not in s.text and "\t" not in s.text and len(s.text) <= 60 and s.kind != "private_key"
][:12]
SESSION = "s-privacy"
GHP = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def turns_with_secrets(tenant: str) -> list[dict[str, Any]]:
    bodies = []
    for i, case in enumerate(CASES):
        short = ONE_LINE[i % len(ONE_LINE)]
        other = ONE_LINE[(i + 1) % len(ONE_LINE)]
        extra: dict[str, Any] = {
            "tags": [short.text, "plain"],
            "metadata": {other.text: case.text, "note": short.text},
        }
        if i % 2:
            extra.update(role="tool", tool_name=other.text, tool_status="success")
        bodies.append(turn(tenant, SESSION, case.text, **extra))
    return bodies


def all_secrets() -> list[Secret]:
    return [c.secret for c in CASES] + ONE_LINE


def found_in(texts: list[tuple[str, str]], secrets: list[Secret]) -> list[str]:
    """(where, secret kind, what leaked) for every text that holds a secret."""
    return [f"{where}: {s.kind} {leaked}" for where, text in texts for s in secrets if (leaked := leaks(s, text))]


def postgres_texts(stack: RunningStack, tenant: str) -> list[tuple[str, str]]:
    """Every text, JSON and array value of every row of the tenant (as superuser)."""
    out: list[tuple[str, str]] = []
    with stack.superuser_db() as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name IN"
            " (SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            "  AND table_type = 'BASE TABLE')"
        ).fetchall()
        tables: dict[str, list[str]] = {}
        for table, column, data_type in columns:
            tables.setdefault(str(table), [])
            if data_type in ("text", "jsonb", "json", "ARRAY", "character varying"):
                tables[str(table)].append(str(column))
        for table, cols in tables.items():
            if not cols:
                continue
            has_tenant = any(c == "tenant_id" for c, in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s",
                (table,),
            ))  # fmt: skip
            select = ", ".join(f'"{c}"::text' for c in cols)
            query = f'SELECT {select} FROM "{table}"' + (" WHERE tenant_id = %s" if has_tenant else "")  # noqa: S608
            try:
                rows = conn.execute(query, (tenant,) if has_tenant else ()).fetchall()
            except psycopg.Error:
                continue
            out.extend((f"{table}.{c}", str(v)) for row in rows for c, v in zip(cols, row, strict=True) if v)
    return out


def redis_texts(stack: RunningStack) -> list[tuple[str, str]]:
    """Every key and every value in Redis, whatever its type."""
    client: Any = stack.redis()
    out: list[tuple[str, str]] = []
    try:
        for raw_key in client.scan_iter(count=1000):
            key = raw_key.decode(errors="replace")
            out.append(("redis key", key))
            kind = client.type(raw_key).decode()
            values: list[Any] = []
            if kind == "string":
                values = [client.get(raw_key)]
            elif kind == "hash":
                values = [x for kv in client.hgetall(raw_key).items() for x in kv]
            elif kind == "list":
                values = client.lrange(raw_key, 0, -1)
            elif kind == "set":
                values = list(client.smembers(raw_key))
            elif kind == "zset":
                values = client.zrange(raw_key, 0, -1)
            elif kind == "stream":
                values = [x for _, fields in client.xrange(raw_key) for kv in fields.items() for x in kv]
            out.extend((f"redis {key}", v.decode(errors="replace")) for v in values if isinstance(v, bytes))
    finally:
        client.close()
    return out


async def kafka_texts(stack: RunningStack, tenant: str) -> list[tuple[str, str]]:
    consumer = AIOKafkaConsumer(
        topics.TURNS, bootstrap_servers=stack.settings.require_kafka(), group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        out: list[tuple[str, str]] = []
        while batches := await consumer.getmany(timeout_ms=1500, max_records=100_000):
            out.extend(
                (f"kafka {r.partition}@{r.offset}", r.value.decode(errors="replace"))
                for records in batches.values()
                for r in records
                if r.value and tenant.encode() in r.value
            )
        return out
    finally:
        await consumer.stop()


async def api_texts(gateway: httpx.AsyncClient) -> list[tuple[str, str]]:
    user = {"user_id": "user-1"}
    answers = {
        "search": await gateway.get("/v1/search", params={**user, "q": "card password key token deploy", "k": 100}),
        "search lesson": await gateway.get("/v1/search", params={**user, "q": "what went wrong with the deploy"}),
        "context": await gateway.get(
            "/v1/context", params={**user, "session_id": SESSION, "query": "password card key", "budget": 20000}
        ),
        "buffer": await gateway.get(f"/v1/sessions/{SESSION}/buffer", params=user),
        "skills": await gateway.get("/v1/skills/best", params={**user, "task": "deploy", "k": 50}),
    }
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.text)
    return [(name, response.text) for name, response in answers.items()]


async def test_generated_secrets_are_stored_and_served_nowhere(
    stack: RunningStack, running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    bodies = turns_with_secrets(tenant)
    response = await gateway.post("/v1/turns", json={"turns": bodies})
    assert response.status_code == 202, response.text
    skill, step = ONE_LINE[0], ONE_LINE[1]
    feedback = CASES[-1]  # "PASSWORD: correct horse battery staple"
    event = {
        "agent_id": "agent-1", "user_id": "user-1", "session_id": SESSION, "skill": skill.text,
        "status": "failure", "feedback": feedback.text, "steps": ["build", step.text, "restart"],
    }  # fmt: skip
    assert (await gateway.post("/v1/tool-events", json=event)).status_code == 202
    # Every turn and the tool event stored, and the failure's lesson written by the memory worker.
    await eventually(lambda: count_rows(stack, "event_log", tenant) == len(bodies) + 1)
    await eventually(lambda: count_rows(stack, "episodes", tenant) == len(bodies) + 2, timeout_s=30)

    secrets = [*all_secrets(), feedback.secret]
    stored, cached, ours, served = (
        postgres_texts(stack, tenant), redis_texts(stack), await kafka_texts(stack, tenant), await api_texts(gateway)
    )  # fmt: skip
    # Each scan saw what was written: the placeholders are there, in the fields they replace.
    for name, texts, where in (
        ("postgres", stored, ("episodes.content", "episodes.tags", "episodes.metadata", "skills.name",
                              "skill_runs.feedback", "event_log.content", "event_log.tool_name", "event_log.metadata")),
        ("redis", cached, ("redis ",)),
        ("kafka", ours, ("kafka ",)),
        ("api", served, ("search", "context", "buffer", "skills")),
    ):  # fmt: skip
        seen = {w for w in where for place, text in texts if place.startswith(w) and "[redacted:" in text.lower()}
        assert seen == set(where), (name, set(where) - seen)
    assert len(ours) == len(bodies) + 1
    assert found_in(stored, secrets) == []
    assert found_in(cached, secrets) == []
    assert found_in(ours, secrets) == [], "raw secrets reached Kafka"
    assert found_in(served, secrets) == []


async def test_an_identifier_carrying_a_secret_is_refused_naming_the_field(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    for field, value in (
        ("user_id", GHP),
        ("session_id", "4111-1111-1111-1111"),
        ("project_id", "redis://:zqpw@cache"),
        ("agent_id", "deploy_" + GHP),
    ):
        response = await gateway.post("/v1/turns", json=turn(tenant, "s1", "hello", **{field: value}))
        assert response.status_code == 422, (field, response.text)
        error = response.json()["error"]
        assert [d["loc"][-1] for d in error["details"]] == [field]
        assert field in error["message"] and value not in response.text
    event = {"agent_id": "agent-1", "user_id": GHP, "session_id": "s1", "skill": "deploy", "status": "success"}
    response = await gateway.post("/v1/tool-events", json=event)
    assert response.status_code == 422
    assert "user_id" in response.json()["error"]["message"] and GHP not in response.text
    assert count_rows(stack, "event_log", tenant) == 0


async def test_the_worker_dead_letters_a_direct_record_whose_identifier_carries_a_secret(
    stack: RunningStack, running_worker: WorkerHandle, tenant: str
) -> None:
    """Agents may produce to Kafka directly: the worker applies the gateway's rule."""
    codec = turn_event_codec()
    marker = uuid.uuid4().hex
    refused = avro_record(tenant, f"refused {marker}", session="s1", user_id=GHP)
    follower = avro_record(tenant, "card 4111\u00a01111\u00a01111\u00a01111", session="s1", tags=["redis://:zqpw@h"])
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.require_kafka(), enable_idempotence=False)
    await producer.start()
    try:
        for record in (refused, follower):
            await producer.send_and_wait(topics.TURNS, key=turn_key(tenant, "s1"), value=codec.encode(record))
    finally:
        await producer.stop()
    await eventually(lambda: count_rows(stack, "event_log", tenant) == 1)
    found: list[Any] = []

    async def dead_lettered() -> bool:
        found[:] = await dlq_records(stack, marker.encode())
        return len(found) == 1

    await eventually(dead_lettered, timeout_s=30)
    reason = dict(found[0].headers)[topics.DLQ_REASON].decode()
    assert "user_id carries a secret (api_key)" in reason and GHP not in reason
    with stack.db(tenant) as conn:
        row = conn.execute("SELECT content, tags FROM episodes").fetchone()
    assert row == ("card [REDACTED:card_number]", ["redis://:[REDACTED:connection_secret]@h"])
