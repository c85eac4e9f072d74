"""Single-use "allow once" grants: a human lets one command run once in one session.

A grant covers exactly (tenant, session, project or none, agent or any, tool, command): a
Redis key per (tenant, session) and a hash of the rest (``grant_hash``), with a TTL. A grant
made for project P1 is not one for P2 or for no project; one made for agent A is used only
by evaluations acting for A, one made for no agent by any evaluation in that session and
project. Using it is a GETDEL, so of any number of concurrent evaluations exactly one sees it.
"""

from __future__ import annotations

import hashlib
import json
import uuid

import redis.asyncio as aioredis

from sinks.redis.keys import grant_key as _grant_key


def command_hash(tool: str, command: str) -> str:
    """SHA-256 of the tool and the command (what the audit log keeps to find a command by)."""
    return hashlib.sha256(f"{tool}\x1f{command}".encode()).hexdigest()


def grant_hash(*, project_id: str | None, agent_id: str | None, tool: str, command: str) -> str:
    """SHA-256 of everything a grant is bound to besides its tenant and session, encoded
    unambiguously (a JSON array: no project is ``null``, never the same as any project id)."""
    encoded = json.dumps(["grant/v2", project_id, agent_id, tool, command], ensure_ascii=True)
    return hashlib.sha256(encoded.encode()).hexdigest()


def grant_key(
    tenant_id: str, session_id: str, *, project_id: str | None, agent_id: str | None, tool: str, command: str
) -> str:
    digest = grant_hash(project_id=project_id, agent_id=agent_id, tool=tool, command=command)
    return _grant_key(tenant_id, session_id, digest)


async def grant_once(
    client: aioredis.Redis,
    *,
    tenant_id: str,
    session_id: str,
    project_id: str | None,
    agent_id: str | None,
    tool: str,
    command: str,
    ttl_s: int,
) -> uuid.UUID:
    """Grant one run of ``command`` in this session and project (None: evaluations naming no
    project), to ``agent_id``'s evaluations only, or to any evaluation when it is None."""
    grant_id = uuid.uuid4()
    key = grant_key(tenant_id, session_id, project_id=project_id, agent_id=agent_id, tool=tool, command=command)
    await client.set(key, str(grant_id), ex=ttl_s)
    return grant_id


async def use_grant(
    client: aioredis.Redis,
    *,
    tenant_id: str,
    session_id: str,
    project_id: str | None,
    agent_id: str | None,
    tool: str,
    command: str,
) -> uuid.UUID | None:
    """Consume a grant atomically — the acting agent's own first, then one for any agent;
    None when there is none (or it was already used)."""
    for holder in (agent_id, None) if agent_id is not None else (None,):
        key = grant_key(tenant_id, session_id, project_id=project_id, agent_id=holder, tool=tool, command=command)
        value = await client.getdel(key)
        if value:
            return uuid.UUID(value.decode() if isinstance(value, bytes) else value)
    return None
