"""Lawful erasure: tombstones, and the locks that keep in-flight writes from outliving it.

Writers take a *shared* advisory lock per (tenant, user) for the length of their
transaction and skip forgotten events; ``memstream_erase_user`` takes the *exclusive*
lock, so it waits for in-flight writes and every later write sees its tombstone.

What is forgotten (``memstream_forgotten``, migration 0007): an event whose id an erasure
removed, whatever time it claims; and every event of an erased user until an operator
records the user's renewed consent (``memstream_consent_user``), after which events
*received* after the consent are stored again. Erasure and consent are ordered by when
memstream received an event (``Turn.received_at``: its Kafka record's time), never by the
``event_time`` a client wrote in it: a turn acknowledged before an erasure stays forgotten
however far ahead it is dated and however late a worker reaches it, nor can a retry of a
post that timed out bring it back. An event whose arrival is unknown (None) is forgotten
whenever its user was ever erased.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from sinks.postgres.access import erase_access


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


async def forgotten(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, events: Iterable[tuple[uuid.UUID, str, datetime | None]]
) -> set[uuid.UUID]:
    """Which of these (event id, user id, time memstream received it) of the current tenant
    are forgotten. Those forgotten for their user's erasure are tombstoned by id on the way
    (``memstream_skip_forgotten``, migration 0018): a retry of one under the same id after a
    consent is forgotten too."""
    items = list(events)
    if not items:
        return set()
    cur = await conn.execute(
        "SELECT * FROM memstream_skip_forgotten(%s, %s::uuid[], %s::text[], %s::timestamptz[])",
        (tenant_id, [e for e, _, _ in items], [u for _, u, _ in items], [t for _, _, t in items]),
    )
    return {row[0] for row in await cur.fetchall()}


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
    await erase_access(conn, user_id)
    return Erasure(row[0], row[1], int(row[2]), int(row[3]), list(row[4]))


@dataclass(frozen=True)
class Consent:
    consent_id: uuid.UUID
    consented_at: datetime
    #: Whether the user had been erased (a consent without an erasure changes nothing).
    after_erasure: bool


async def record_consent(conn: psycopg.AsyncConnection[Any], user_id: str) -> Consent:
    """Record a user's renewed consent (current tenant): events after it are stored again."""
    cur = await conn.execute("SELECT * FROM memstream_consent_user(%s)", (user_id,))
    row = await cur.fetchone()
    if row is None:  # pragma: no cover - the function always returns one row
        raise RuntimeError("memstream_consent_user returned nothing")
    return Consent(row[0], row[1], bool(row[2]))
