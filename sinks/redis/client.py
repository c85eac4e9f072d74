"""The asyncio Redis client of a process: one blocking connection pool.

redis-py's ``from_url`` gives a pool of 100 connections that raises ``ConnectionError`` for
the 101st concurrent command — a healthy Redis answered "unavailable" under load. A
``BlockingConnectionPool`` makes a command wait (up to ``pool_timeout_s``) for a free
connection instead; only then is it an error (503 at the gateway, a retry in the worker).
"""

from __future__ import annotations

import redis.asyncio as aioredis


def redis_client(
    url: str,
    *,
    max_connections: int,
    pool_timeout_s: float,
    socket_timeout_s: float,
    connect_timeout_s: float,
) -> aioredis.Redis:
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=connect_timeout_s,
    )
    return aioredis.Redis.from_pool(pool)  # closing the client closes the pool
