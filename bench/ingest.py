"""Ingest throughput and latency: ``python -m bench.ingest [--turns N]``.

Posts N turns across S sessions through the gateway (batches, concurrent clients)
and measures, from Postgres itself:

- ``turns_per_s``: N / (last episode row committed - first POST sent): the rate at
  which turns become durable and searchable;
- ``latency_ms``: p50/p99 of (row committed - event time stamped by the gateway);
- ``accept_turns_per_s``: how fast the gateway acknowledged (broker acks) the posts.

Uses the running ``memstream up`` (same data dir) or starts a private embedded stack.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import psycopg
from aiokafka import AIOKafkaProducer

from agents_gateway.auth import Principal
from agents_gateway.models import TurnIn
from agents_gateway.routes.turns import to_records
from bench.corpus import conversation_roles, turn_text
from memstream.kafka_security import KafkaSecurity
from memstream.settings import Settings
from ops.stack.session import issue_key, stack_session
from schemas.codec import turn_event_codec
from schemas.topics import TURNS
from schemas.turns import turn_key


def make_batches(tenant: str, *, turns: int, sessions: int, batch: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = []
    for i in range(turns):
        session = i % sessions
        role = conversation_roles(i // sessions)
        items.append(
            {
                "tenant_id": tenant,
                "agent_id": "bench-agent",
                "user_id": f"user-{session % 10}",
                "project_id": "CloudRetail" if session % 2 else None,
                "session_id": f"session-{session}",
                "role": role,
                "content": turn_text(rng, role),
            }
        )
    return [{"turns": items[i : i + batch]} for i in range(0, len(items), batch)]


async def post_one(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> None:
    for attempt in range(20):
        response = await client.post(
            f"{url}/v1/turns", content=orjson.dumps(body), headers={"content-type": "application/json"}
        )
        if response.status_code == 202:
            return
        if response.status_code not in (429, 503):
            raise RuntimeError(f"POST /v1/turns -> {response.status_code}: {response.text}")
        await asyncio.sleep(float(response.headers.get("retry-after", 0.1 * (attempt + 1))))
    raise RuntimeError("the gateway kept answering 503")


async def post_all(url: str, bodies: list[dict[str, Any]], *, api_key: str, concurrency: int, rate: float) -> float:
    """Post every body with at most ``concurrency`` requests in flight; with ``rate`` > 0,
    pace the sends so turns go out at ``rate`` per second (an open-loop load, for latency)."""
    gate = asyncio.Semaphore(concurrency)
    started = time.time()
    clock = time.monotonic()
    sent = 0
    async with httpx.AsyncClient(timeout=60, headers={"authorization": f"Bearer {api_key}"}) as client:

        async def send(body: dict[str, Any]) -> None:
            try:
                await post_one(client, url, body)
            finally:
                gate.release()

        tasks = []
        for body in bodies:
            if rate > 0:
                await asyncio.sleep(max(0.0, clock + sent / rate - time.monotonic()))
            await gate.acquire()
            tasks.append(asyncio.create_task(send(body)))
            sent += len(body["turns"])
        await asyncio.gather(*tasks)
    return started


async def produce_all(
    bootstrap_servers: str, bodies: list[dict[str, Any]], *, security: KafkaSecurity, rate: float
) -> float:
    """Produce Avro straight to the turns topic, as an agent with a Kafka client would."""
    codec = turn_event_codec()
    tenant = bodies[0]["turns"][0]["tenant_id"]
    principal = Principal(key_id="bench", tenant_id=tenant, agent_id=None, scopes=frozenset({"ingest"}))
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers, acks="all", linger_ms=5, enable_idempotence=False,
        **security.client_kwargs(),
    )  # fmt: skip
    await producer.start()
    started = time.time()
    clock = time.monotonic()
    sent = 0
    try:
        for body in bodies:
            if rate > 0:
                await asyncio.sleep(max(0.0, clock + sent / rate - time.monotonic()))
            turns = [TurnIn.model_validate(t) for t in body["turns"]]
            futures = [
                await producer.send(TURNS, key=turn_key(r["tenant_id"], r["session_id"]), value=codec.encode(r))
                for r in to_records(turns, now=datetime.now(UTC), principal=principal)
            ]
            await asyncio.gather(*futures)
            sent += len(turns)
    finally:
        await producer.stop()
    return started


def wait_durable(database_url: str, tenant: str, turns: int, *, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT set_config('app.tenant_id', %s, false)", (tenant,))  # row-level security
        while True:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM episodes WHERE tenant_id = %(t)s),"
                " (SELECT count(*) FROM event_log WHERE tenant_id = %(t)s)",
                {"t": tenant},
            ).fetchone()
            assert row is not None
            episodes, events = int(row[0]), int(row[1])
            if episodes >= turns and events >= turns:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {episodes} episodes / {events} events of {turns} after {timeout_s} s")
            time.sleep(0.2)
        stats = conn.execute(
            "SELECT extract(epoch FROM max(ingested_at)),"
            " percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ingested_at - created_at)),"
            " percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM ingested_at - created_at)),"
            " max(extract(epoch FROM ingested_at - created_at))"
            " FROM episodes WHERE tenant_id = %s",
            (tenant,),
        ).fetchone()
        log_last = conn.execute(
            "SELECT extract(epoch FROM max(recorded_at)) FROM event_log WHERE tenant_id = %s",
            (tenant,),
        ).fetchone()
    assert stats is not None and log_last is not None
    return {
        "episodes": episodes,
        "events": events,
        "last_episode_at": float(stats[0]),
        "last_event_at": float(log_last[0]),
        "p50_s": float(stats[1]),
        "p99_s": float(stats[2]),
        "max_s": float(stats[3]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--batch", type=int, default=100, help="turns per POST")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent HTTP clients")
    parser.add_argument(
        "--rate", type=float, default=0, help="turns/s to offer (0 = as fast as the gateway takes them)"
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes (private stack only)")
    parser.add_argument("--vector-index", choices=["exact", "hnsw"], default=None)
    parser.add_argument(
        "--via",
        choices=["gateway", "kafka"],
        default="gateway",
        help="post through the gateway, or produce Avro to Kafka directly (the worker alone)",
    )
    parser.add_argument(
        "--no-memory-worker",
        action="store_true",
        help="private stack without the long-term memory worker (ingest alone on the two cores)",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    settings = Settings()
    if args.vector_index:
        settings = Settings(**{**settings.model_dump(), "vector_index": args.vector_index})
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    bodies = make_batches(tenant, turns=args.turns, sessions=args.sessions, batch=args.batch, seed=args.seed)
    with stack_session(settings, workers=args.workers, memory=not args.no_memory_worker) as stack:
        if args.via == "kafka":
            started = asyncio.run(
                produce_all(
                    stack.settings.require_kafka(), bodies, security=stack.settings.kafka_security(), rate=args.rate
                )
            )
        else:
            key = issue_key(
                stack.settings, tenant_id=tenant, scopes=["ingest"], name="bench.ingest", rate_limit_per_s=1e6
            )
            started = asyncio.run(
                post_all(stack.gateway_url, bodies, api_key=key, concurrency=args.concurrency, rate=args.rate)
            )
        accepted_at = time.time()
        durable = wait_durable(stack.settings.require_database_url(), tenant, args.turns, timeout_s=600)
    elapsed = durable["last_episode_at"] - started
    result = {
        "benchmark": "ingest",
        "turns": args.turns,
        "via": args.via,
        "sessions": args.sessions,
        "batch": args.batch,
        "concurrency": args.concurrency,
        "offered_rate": args.rate or "max",
        "workers": stack.workers,
        "memory_worker": not args.no_memory_worker,
        "partitions": stack.settings.topic_partitions,
        "private_stack": stack.private,
        "vector_index": stack.settings.vector_index,
        "accept_turns_per_s": round(args.turns / (accepted_at - started), 1),
        "turns_per_s": round(args.turns / elapsed, 1),
        "event_log_turns_per_s": round(args.turns / (durable["last_event_at"] - started), 1),
        "latency_ms": {
            "p50": round(durable["p50_s"] * 1000, 1),
            "p99": round(durable["p99_s"] * 1000, 1),
            "max": round(durable["max_s"] * 1000, 1),
        },
        "rows": {"episodes": durable["episodes"], "event_log": durable["events"]},
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
