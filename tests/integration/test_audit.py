"""The audit log: immutable, written with every memory change and decision, relayed to
memstream.audit.v1 in order, and exportable as Avro or JSON lines."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import fastavro
import httpx
import orjson
import psycopg
import pytest
from aiokafka import AIOKafkaConsumer

from ops.stack.state import settings_env
from schemas import topics
from schemas.codec import audit_record_codec
from tests.fixtures.stack import RunningStack, WorkerHandle, eventually
from tests.integration.helpers import count_rows, post_turns, turn


async def audit_topic_records(stack: RunningStack, tenant: str) -> list[dict[str, object]]:
    consumer = AIOKafkaConsumer(
        topics.AUDIT,
        bootstrap_servers=stack.settings.require_kafka(),
        group_id=None,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        batches = await consumer.getmany(timeout_ms=1500, max_records=100_000)
    finally:
        await consumer.stop()
    codec = audit_record_codec()
    records = [codec.decode(r.value) for rs in batches.values() for r in rs if r.key == tenant.encode()]
    return sorted(records, key=lambda r: r["seq"])  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(
    "statement", ["UPDATE audit_log SET action = 'nothing'", "DELETE FROM audit_log", "TRUNCATE audit_log"]
)
async def test_audit_rows_cannot_be_changed_by_anyone(
    stack: RunningStack, gateway: httpx.AsyncClient, tenant: str, statement: str
) -> None:
    await gateway.post("/v1/permissions/evaluate", json={"session_id": "s", "tool": "shell", "command": "ls"})
    with stack.db(tenant) as conn:
        before = conn.execute("SELECT audit_id, action, detail FROM audit_log ORDER BY seq").fetchall()
    assert [a for _, a, _ in before] == ["api_key.create", "permission.decision"]
    with stack.db(tenant) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)
    with (
        stack.owner_db(tenant) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="immutable"),
    ):
        conn.execute(statement)
    with stack.db(tenant) as conn:
        assert conn.execute("SELECT audit_id, action, detail FROM audit_log ORDER BY seq").fetchall() == before


async def test_memory_changes_and_decisions_reach_the_audit_topic_in_order(
    stack: RunningStack, running_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    ids = await post_turns(gateway, [turn(tenant, "s1", f"turn {i}") for i in range(3)])
    await eventually(lambda: count_rows(stack, "episodes", tenant) == 3)
    await gateway.post("/v1/permissions/evaluate", json={"session_id": "s1", "tool": "shell", "command": "ls"})
    with stack.db(tenant) as conn:
        logged = conn.execute("SELECT action, detail FROM audit_log ORDER BY seq").fetchall()
    inserted = [d for a, d in logged if a == "memory.insert"]
    assert sorted(i for d in inserted for i in d["event_ids"]) == sorted(ids)

    records: list[dict[str, object]] = []

    async def relayed() -> bool:
        records[:] = await audit_topic_records(stack, tenant)
        return len(records) == len(logged)

    await eventually(relayed, timeout_s=30)
    assert [r["action"] for r in records] == [a for a, _ in logged]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)  # type: ignore[type-var]
    assert len({r["audit_id"] for r in records}) == len(records)
    assert orjson.loads(records[-1]["detail"])["decision"] == "PENDING"  # type: ignore[arg-type]

    def outbox_emptied() -> bool:
        with stack.superuser_db() as conn:
            pending = conn.execute("SELECT count(*) FROM audit_outbox WHERE tenant_id = %s", (tenant,)).fetchone()
        return pending == (0,)

    # The relay deletes the page after the broker's acks: the records may be read before that commits.
    await eventually(outbox_emptied, timeout_s=30)  # the outbox is emptied once the broker acknowledged


def test_audit_export_writes_avro_and_json_lines(stack: RunningStack, tmp_path: Path, tenant: str) -> None:
    with stack.owner_db(tenant) as conn:
        for action in ("permission.decision", "memory.insert", "user.erase"):
            conn.execute(
                "INSERT INTO audit_log (tenant_id, actor, action, detail) VALUES (%s, 'test', %s, '{\"n\": 1}')",
                (tenant, action),
            )
    env = {**os.environ, **settings_env(stack.settings)}
    for fmt in ("jsonl", "avro"):
        out = tmp_path / f"audit.{fmt}"
        result = subprocess.run(
            [sys.executable, "-m", "ops", "audit", "export", "--tenant", tenant, "--format", fmt,
             "--out", str(out), "--since", "2000-01-01T00:00:00Z"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        if fmt == "jsonl":
            rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        else:
            rows = list(fastavro.reader(io.BytesIO(out.read_bytes())))
        assert [r["action"] for r in rows] == ["permission.decision", "memory.insert", "user.erase"]
        assert {r["tenant_id"] for r in rows} == {tenant}
    empty = tmp_path / "none.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ops", "audit", "export", "--tenant", tenant, "--out", str(empty),
         "--until", "2000-01-01T00:00:00Z"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    assert empty.read_bytes() == b""
