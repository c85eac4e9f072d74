"""Readiness is the gateway's own: ``/readyz`` is 200 while the broker, Postgres and Redis answer,
whatever the workers do; ``/readyz/workers`` reports each role (ingest, memory) from its
heartbeats and defect records, 503 for a role asked for without a live worker, and 503 for a
code defect whatever roles were asked for.

The gateway here has a consumer-group name of its own, so no worker of the test stack counts;
the workers' announcements are written as a worker writes them (``streams/heartbeat.py``,
``streams/defects.py``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import orjson
import redis.asyncio as aioredis

from agents_gateway.app import create_app
from memstream.settings import Settings
from sinks.redis.keys import defect_key
from streams.heartbeat import beat, forget, memory_app_name
from tests.fixtures.stack import RunningStack, client_for

DEFECT = {
    "consumer": "facts", "what": "facts sink", "where": "tenant t-1 user alice", "attempts": 5,
    "error": "KeyError: 'alice-secret'", "at": datetime.now(UTC).isoformat(), "pid": 1,
}  # fmt: skip


async def test_the_gateway_is_ready_without_workers_and_the_workers_signal_is_per_role(stack: RunningStack) -> None:
    app_id = f"readiness-{uuid.uuid4().hex[:8]}"
    app = create_app(Settings(**{**stack.settings.model_dump(), "app_id": app_id}))
    client = aioredis.Redis.from_url(stack.settings.require_redis_url())
    try:
        async with app.router.lifespan_context(app), client_for(app, None) as gateway:
            ready = await gateway.get("/readyz")
            assert ready.status_code == 200, ready.text
            assert set(ready.json()["checks"]) == {"broker", "postgres", "redis"}

            none = await gateway.get("/readyz/workers")
            assert none.status_code == 503
            roles = none.json()["roles"]
            assert {r: (v["state"], v["required"], v["workers"]) for r, v in roles.items()} == {
                "ingest": ("absent", True, 0), "memory": ("absent", True, 0),
            }  # fmt: skip
            assert "memstream worker --memory" in roles["memory"]["detail"]

            # An ingest-only deployment: one ingest worker holding two partitions.
            await beat(client, app_id=app_id, member="host:1", ttl_s=30, partitions=["memstream.turns.v1:0", "x:1"])
            ingest_only = await gateway.get("/readyz/workers", params={"role": "ingest"})
            assert ingest_only.status_code == 200, ingest_only.text
            roles = ingest_only.json()["roles"]
            assert (roles["ingest"]["state"], roles["ingest"]["workers"], roles["ingest"]["partitions"]) == (
                "consuming", 1, 2,
            )  # fmt: skip
            assert (roles["memory"]["state"], roles["memory"]["required"]) == ("absent", False)
            assert (await gateway.get("/readyz/workers")).status_code == 503, "every role by default"

            await beat(client, app_id=memory_app_name(app_id), member="host:2", ttl_s=30, partitions=["f:0"])
            both = await gateway.get("/readyz/workers", params={"role": ["ingest", "memory"]})
            assert both.status_code == 200 and both.json()["status"] == "ready"
            assert both.json()["roles"]["memory"]["detail"].startswith("1 worker(s) consuming 1 partition(s); ")

            # A memory worker stopped on a code defect: loud even for a caller that asked for ingest only,
            # and the gateway itself stays ready.
            await forget(client, app_id=memory_app_name(app_id), member="host:2")
            await client.set(defect_key(memory_app_name(app_id)), orjson.dumps(DEFECT))
            for params in ({"role": "ingest"}, {}):
                stopped = await gateway.get("/readyz/workers", params=params)
                assert stopped.status_code == 503
                memory = stopped.json()["roles"]["memory"]
                assert memory["state"] == "stopped_on_defect"
                assert "code defect in agent facts, stage facts sink: KeyError" in memory["detail"]
                assert "alice" not in stopped.text, "the error's message and where may hold a tenant's data"
            assert (await gateway.get("/readyz")).status_code == 200

            unknown = await gateway.get("/readyz/workers", params={"role": "billing"})
            assert unknown.status_code == 422 and unknown.json()["error"]["code"] == "invalid_request"
    finally:
        await client.delete(defect_key(memory_app_name(app_id)))
        await forget(client, app_id=app_id, member="host:1")
        await client.aclose()
