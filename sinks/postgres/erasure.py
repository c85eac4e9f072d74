"""Lawful erasure: tombstones, and the locks that keep in-flight writes from outliving it.

Writers take a *shared* advisory lock per (tenant, user) for the length of their
transaction and skip turns of erased users; ``memstream_erase_user`` takes the
*exclusive* lock, so it waits for in-flight writes and every later write sees its
tombstone (see migration 0002).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg


def user_ref(tenant_id: str, user_id: str) -> str:
    """The pseudonymous reference tombstones and audit records use (= SQL memstream_user_ref)."""
    return hashlib.sha256(f"{tenant_id}\x1f{user_id}".encode()).hexdigest()


async def lock_users(conn: psycopg.AsyncConnection[Any], tenant_id: str, users: Iterable[str]) -> None:
    """Shared locks on the users' memory until the transaction ends (sorted: no deadlocks)."""
    ordered = sorted(set(users))
    if ordered:
        await conn.execute(
            "SELECT pg_advisory_xact_lock_shared(memstream_user_lock(%s, u)) FROM unnest(%s::text[]) AS u",
            (tenant_id, ordered),
        )


async def erased_users(conn: psycopg.AsyncConnection[Any], tenant_id: str, users: Iterable[str]) -> dict[str, datetime]:
    """Users of ``tenant_id`` (the current tenant) that were erased, with the latest erasure time."""
    refs = {user_ref(tenant_id, u): u for u in set(users)}
    if not refs:
        return {}
    cur = await conn.execute(
        "SELECT user_ref, max(erased_at) FROM erasures WHERE tenant_id = %s AND user_ref = ANY(%s) GROUP BY user_ref",
        (tenant_id, list(refs)),
    )
    return {refs[ref]: when for ref, when in await cur.fetchall()}


@dataclass(frozen=True)
class Erasure:
    erasure_id: uuid.UUID
    erased_at: datetime
    episodes: int
    events: int
    sessions: list[str]


async def erase_user(conn: psycopg.AsyncConnection[Any], user_id: str) -> Erasure:
    """Erase a user of the current tenant (``act_as`` first) from Postgres."""
    cur = await conn.execute("SELECT * FROM memstream_erase_user(%s)", (user_id,))
    row = await cur.fetchone()
    if row is None:  # pragma: no cover - the function always returns one row
        raise RuntimeError("memstream_erase_user returned nothing")
    return Erasure(row[0], row[1], int(row[2]), int(row[3]), list(row[4]))
