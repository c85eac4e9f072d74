"""Replay throughput: ``python -m bench.replay [--events N]``.

Starts private embedded services (Postgres, Redis, broker; no worker, no gateway), writes N
generated turns of one tenant into the event log as the ingest worker logs them
(``append_events``, binary COPY): agent conversations (``bench.corpus``) of ``--users``
users over ``--sessions`` sessions and the last 60 days, user / assistant / tool turns
(tool turns name a skill and succeed or fail, so skills, skill runs and lessons are built;
user and assistant turns state preferences and decisions, so facts, their history and the
graph are built). The memory tables start empty.

Then two full rebuilds of the tenant, through ``memstream replay``'s code (the live
workers' stages: embeddings with the local model, the offline extractor, the fact sink, the
procedure stage):

1. ``rebuild``: into fresh tables (a shadow schema), then the switch into the live tables;
2. ``verify``: into fresh tables again, compared by digest with the live memory (the first
   rebuild), then dropped.

Prints JSON: events, events/s of each rebuild (events / replay time, the switch apart),
the switch time, the rows per projection and whether the two digests matched. Every
process shares the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import psycopg

from bench.corpus import conversation_roles, turn_text
from memstream.settings import Settings
from ops.stack.supervisor import EmbeddedStack
from schemas.turns import Role, ToolStatus, Turn
from sinks.postgres.event_log import append_events
from sinks.postgres.maintenance import register_tenants
from sinks.postgres.tenancy import act_as
from streams.replay.digests import differences
from streams.replay.runner import ReplayOptions, run_replay
from streams.replay.scope import Scope

AGENT = "bench-agent"
SKILLS = ("deploy", "run tests", "db migration", "rollback")
PROJECTS: tuple[str | None, ...] = ("CloudRetail", "Payments", None)
HISTORY = timedelta(days=60)
WRITE_BATCH = 10_000


def generate(tenant: str, *, events: int, users: int, sessions: int, seed: int) -> Iterator[list[Turn]]:
    """``events`` turns in batches, in time order; each session a run of consecutive turns."""
    rng = random.Random(seed)
    start = datetime.now(UTC) - HISTORY
    step = HISTORY / max(events, 1)
    per_session = max(1, events // sessions)
    batch: list[Turn] = []
    for i in range(events):
        session = i // per_session
        role: Role = conversation_roles(i % per_session)  # type: ignore[assignment]
        content = turn_text(rng, role)
        extra: dict[str, Any] = {}
        if role == "tool":
            status: ToolStatus = "failure" if rng.random() < 0.2 else "success"
            extra = {"tool_name": "shell", "tool_status": status, "metadata": {"skill": rng.choice(SKILLS)}}
        batch.append(
            Turn(
                event_id=uuid.UUID(int=rng.getrandbits(128), version=4), tenant_id=tenant, agent_id=AGENT,
                user_id=f"user-{session % users}", project_id=PROJECTS[session % len(PROJECTS)],
                session_id=f"session-{session}", role=role, content=content, event_time=start + step * i,
                **extra,
            )
        )  # fmt: skip
        if len(batch) == WRITE_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def load(settings: Settings, tenant: str, args: argparse.Namespace) -> float:
    """Write the generated turns to the event log; returns the seconds it took."""
    started = time.perf_counter()
    async with await psycopg.AsyncConnection.connect(settings.require_owner_database_url()) as conn:
        async with conn.transaction():
            await register_tenants(conn, {tenant})
        for batch in generate(tenant, events=args.events, users=args.users, sessions=args.sessions, seed=args.seed):
            async with conn.transaction():
                await act_as(conn, tenant, actor="bench")
                await append_events(conn, batch)
    async with await psycopg.AsyncConnection.connect(settings.require_owner_database_url(), autocommit=True) as conn:
        await conn.execute("VACUUM ANALYZE event_log")
    return time.perf_counter() - started


async def run(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    load_s = await load(settings, tenant, args)
    scope = Scope(tenant)
    rebuild = await run_replay(settings, ReplayOptions(scope=scope, target="shadow", batch_size=args.batch_size))
    verify = await run_replay(settings, ReplayOptions(scope=scope, target="verify", batch_size=args.batch_size))
    return {
        "benchmark": "replay",
        "events": args.events,
        "users": args.users,
        "sessions": args.sessions,
        "batch_size": args.batch_size,
        "load_s": round(load_s, 1),
        "rebuild": {
            "events": rebuild.events,
            "replay_s": rebuild.replay_s,
            "events_per_s": rebuild.events_per_s,
            "switch_s": rebuild.switch_s,
            "rejected": len(rebuild.rejected),
        },
        "verify": {"events": verify.events, "replay_s": verify.replay_s, "events_per_s": verify.events_per_s},
        "rows": {name: d["rows"] for name, d in rebuild.digest.items()},
        "digest_matches": verify.matches,
        "differ": differences(verify.digest, verify.live_digest or {}),
        "digest": {name: d["sha256"][:16] for name, d in rebuild.digest.items()},
        "extractor": "offline-rules",
        "embedding_provider": settings.embedding_provider,
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="turns in the event log")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--batch-size", type=int, default=1_000, help="events per replay batch")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    if args.events < 1 or args.users < 1 or args.sessions < 1 or args.batch_size < 1:
        parser.error("--events, --users, --sessions and --batch-size must be positive")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        settings = Settings(
            data_dir=Path(tmp), embedded_broker_port=0, embedded_postgres_port=0, embedded_redis_port=0,
            embedding_provider="local", llm_provider="offline", log_level="WARNING",
        )  # fmt: skip
        stack = EmbeddedStack(settings)
        try:
            resolved = stack.start_services()
            result = asyncio.run(run(resolved, args))
        finally:
            stack.stop()
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0 if result["digest_matches"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
