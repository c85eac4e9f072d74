"""Single-use "allow once" grants: a human lets one command run once in one session.

A grant is a Redis key per (tenant, session, command hash) with a TTL; using it is a
GETDEL, so of any number of concurrent evaluations exactly one sees it.
"""

from __future__ import annotations

import hashlib
import uuid

import redis.asyncio as aioredis

from sinks.redis.keys import grant_key as _grant_key


def command_hash(tool: str, command: str) -> str:
    return hashlib.sha256(f"{tool}\x1f{command}".encode()).hexdigest()


def grant_key(tenant_id: str, session_id: str, tool: str, command: str) -> str:
    return _grant_key(tenant_id, session_id, command_hash(tool, command))


async def grant_once(
    client: aioredis.Redis, *, tenant_id: str, session_id: str, tool: str, command: str, ttl_s: int
) -> uuid.UUID:
    grant_id = uuid.uuid4()
    await client.set(grant_key(tenant_id, session_id, tool, command), str(grant_id), ex=ttl_s)
    return grant_id


async def use_grant(
    client: aioredis.Redis, *, tenant_id: str, session_id: str, tool: str, command: str
) -> uuid.UUID | None:
    """Consume the grant atomically; None when there is none (or it was already used)."""
    value = await client.getdel(grant_key(tenant_id, session_id, tool, command))
    if not value:
        return None
    return uuid.UUID(value.decode() if isinstance(value, bytes) else value)
