"""Fault: a defect in our own code (a ``TypeError`` in a sink stage), injected into a real
worker. It must stop the worker loudly — exit status 70, the log, Redis, ``/readyz/workers`` and
the restarted worker's ``/metrics`` say which agent and stage — never stall the partition in
silence, and the batch it stopped on is consumed again once the code is fixed. The gateway
itself still serves (``/readyz`` is 200): the defect is the workers' signal."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import orjson

from sinks.redis.keys import defect_key
from streams.defects import EXIT_DEFECT
from tests.integration.faults import (
    KafkaSender,
    assert_exactly_once,
    gateway_for,
    landed,
    log_lines,
    make_turn,
    private_stack,
    stored_ids,
    until,
)

#: Loaded by the worker's interpreter at start (``sitecustomize``): every write of the
#: episodes stage fails the way a code defect does.
INJECTED_DEFECT = """
import streams.stages.episodes


async def defective_write(self, batch):
    raise TypeError("injected defect: unsupported operand type(s) for +: 'int' and 'str'")


streams.stages.episodes.EpisodesStage.write = defective_write
"""

GAUGE = 'memstream_code_defect{error="TypeError",operation="episodes sink"}'


async def test_a_code_defect_stops_the_worker_loudly_and_its_batch_is_consumed_after_the_fix(tmp_path: Path) -> None:
    injected = tmp_path / "injected"
    injected.mkdir()
    (injected / "sitecustomize.py").write_text(INJECTED_DEFECT)
    defective = {"PYTHONPATH": os.pathsep.join(p for p in (str(injected), os.environ.get("PYTHONPATH")) if p)}
    tenant = "t-defect"
    async with private_stack(tmp_path, retry_initial_s=0.05, retry_max_s=0.2, defect_attempts=3) as stack:
        sick = stack.worker("sick", env=defective)
        await asyncio.to_thread(sick.start)
        send = KafkaSender(stack.settings.require_kafka())
        turns = [make_turn(tenant, f"s-{i % 2}", f"turn {i}") for i in range(6)]
        try:
            assert await send(turns)
        finally:
            await send.close()
        ids = [str(t["event_id"]) for t in turns]

        await until(lambda: not sick.process.running, timeout_s=60)
        assert sick.process.returncode == EXIT_DEFECT
        [said] = log_lines(sick, "code defect in episodes sink")
        assert "TypeError: injected defect" in said and f"exit status {EXIT_DEFECT}" in said
        assert stored_ids(stack, tenant, "episodes") == []  # the partition did not move past the batch
        client = stack.redis()
        try:
            raw = client.get(defect_key(stack.settings.app_id))
        finally:
            client.close()
        assert raw is not None
        record = orjson.loads(raw)
        assert (record["consumer"], record["what"], record["attempts"]) == ("ingest", "episodes sink", 3)
        assert record["error"].startswith("TypeError: injected defect")

        async with gateway_for(stack.settings, stack.key(tenant)) as gateway:
            response = await gateway.get("/readyz/workers", params={"role": "ingest"})
            assert (await gateway.get("/readyz")).status_code == 200, "the gateway still serves"
        assert response.status_code == 503
        ingest = response.json()["roles"]["ingest"]
        assert ingest["state"] == "stopped_on_defect"
        assert "code defect in agent ingest, stage episodes sink: TypeError" in ingest["detail"]
        assert "injected" not in ingest["detail"]  # the message may hold a tenant's data: the log has it

        # Restarted with the defect still in the code (and patient): its /metrics says what stopped the last one.
        still = stack.worker("still-sick", env=defective, defect_attempts=1_000_000)
        await asyncio.to_thread(still.start)

        def gauge() -> str | None:
            text = httpx.get(still.metrics_url, timeout=5).text
            return next((line for line in text.splitlines() if line.startswith(GAUGE)), None)

        await until(gauge, timeout_s=30)
        await asyncio.to_thread(still.stop)
        assert stored_ids(stack, tenant, "episodes") == []

        # The fix deployed: the batch the defect stopped on is consumed, once, and the record cleared.
        fixed = stack.worker("fixed")
        await asyncio.to_thread(fixed.start)
        await until(lambda: landed(stack, tenant, ids), timeout_s=60)
        assert_exactly_once(stack, tenant, ids)
        await until(lambda: log_lines(fixed, "recovered: a batch went through after the code defect"), timeout_s=30)
        client = stack.redis()
        try:
            assert client.get(defect_key(stack.settings.app_id)) is None
        finally:
            client.close()
        async with httpx.AsyncClient(timeout=5) as http:
            assert GAUGE not in (await http.get(fixed.metrics_url)).text
