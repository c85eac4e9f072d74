"""Workers announce themselves in Redis so the gateway's ``/readyz/workers`` can tell, per role,
whether one is consuming, and which partitions each holds (how a consumer group shares them is
visible at a glance)."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import orjson
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from memstream.settings import Settings
from sinks.redis.keys import partitions_key, workers_key

if TYPE_CHECKING:  # annotations only: importing this module does not import Faust
    import faust

log = logging.getLogger(__name__)


#: The roles a worker plays, each its own consumer group: ``memstream worker`` (ingest: episodes,
#: buffers, the audit relay) and ``memstream worker --memory`` (long-term memory).
WorkerRole = Literal["ingest", "memory"]
WORKER_ROLES: tuple[WorkerRole, ...] = ("ingest", "memory")


def memory_app_name(app_id: str) -> str:
    """The long-term memory worker's consumer group (and heartbeat) name."""
    return f"{app_id}-memory"


def role_app_name(app_id: str, role: WorkerRole) -> str:
    """The consumer group (and heartbeat, and defect record) name of a worker role."""
    return memory_app_name(app_id) if role == "memory" else app_id


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def beat(
    client: aioredis.Redis, *, app_id: str, member: str, ttl_s: float, partitions: Sequence[str] = ()
) -> None:
    """Mark this worker as alive and holding ``partitions`` ("topic:n") for ``ttl_s`` seconds."""
    key = workers_key(app_id)
    now = time.time()
    async with client.pipeline(transaction=False) as pipe:
        pipe.zadd(key, {member: now + ttl_s})
        pipe.zremrangebyscore(key, "-inf", now)
        pipe.hset(partitions_key(app_id), member, orjson.dumps(sorted(partitions)))
        await pipe.execute()


async def forget(client: aioredis.Redis, *, app_id: str, member: str) -> None:
    await client.zrem(workers_key(app_id), member)
    await client.hdel(partitions_key(app_id), member)


async def assignments(client: aioredis.Redis, *, app_id: str) -> dict[str, list[str]]:
    """The partitions each live worker of the group announced (members past their TTL are left out)."""
    found = await client.zrangebyscore(workers_key(app_id), time.time(), "+inf")
    live = [m if isinstance(m, bytes) else str(m).encode() for m in found]
    if not live:
        return {}
    held = await client.hmget(partitions_key(app_id), live)
    return {m.decode(): list(orjson.loads(h)) if h else [] for m, h in zip(live, held, strict=True)}


def announce_from(app: faust.App, client: aioredis.Redis, settings: Settings) -> None:
    """A timer on ``app`` that marks this worker alive while it holds partitions."""
    member = worker_id()
    app_id = str(app.conf.id)

    async def announce() -> None:
        if assigned := app.consumer.assignment():
            try:
                await beat(
                    client, app_id=app_id, member=member, ttl_s=settings.worker_heartbeat_ttl_s,
                    partitions=[f"{tp.topic}:{tp.partition}" for tp in assigned],
                )  # fmt: skip
            except (RedisError, OSError) as exc:  # Redis down: not ready meanwhile, never a crash
                log.warning("heartbeat: %s: %s; next beat in %.1f s", type(exc).__name__, exc, interval_s)

    interval_s = settings.worker_heartbeat_ttl_s / 3
    app.timer(interval=interval_s)(announce)
