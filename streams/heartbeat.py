"""Workers announce themselves in Redis so the gateway's /readyz can tell one is consuming."""

from __future__ import annotations

import os
import socket
import time

import faust
import redis.asyncio as aioredis

from memstream.settings import Settings


def memory_app_name(app_id: str) -> str:
    """The long-term memory worker's consumer group (and heartbeat) name."""
    return f"{app_id}-memory"


def workers_key(app_id: str) -> str:
    return f"ms:workers:{{{app_id}}}"


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def beat(client: aioredis.Redis, *, app_id: str, member: str, ttl_s: float) -> None:
    """Mark this worker as alive (and holding partitions) for ``ttl_s`` seconds."""
    key = workers_key(app_id)
    now = time.time()
    async with client.pipeline(transaction=False) as pipe:
        pipe.zadd(key, {member: now + ttl_s})
        pipe.zremrangebyscore(key, "-inf", now)
        await pipe.execute()


async def forget(client: aioredis.Redis, *, app_id: str, member: str) -> None:
    await client.zrem(workers_key(app_id), member)


async def live_workers(client: aioredis.Redis, *, app_id: str) -> int:
    """How many workers announced partitions within their time-to-live."""
    return int(await client.zcount(workers_key(app_id), time.time(), "+inf"))


def announce_from(app: faust.App, client: aioredis.Redis, settings: Settings) -> None:
    """A timer on ``app`` that marks this worker alive while it holds partitions."""
    member = worker_id()
    app_id = str(app.conf.id)

    async def announce() -> None:
        if app.consumer.assignment():
            await beat(client, app_id=app_id, member=member, ttl_s=settings.worker_heartbeat_ttl_s)

    app.timer(interval=settings.worker_heartbeat_ttl_s / 3)(announce)
