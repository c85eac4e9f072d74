"""Forgetting one memory, asked for by its id (``DELETE /v1/memories/{id}``): an episode (a turn,
a lesson, a daily summary) or a version of a fact, gone for good.

Like an erasure (``erasure.py``) it takes the user's advisory lock exclusively, so writes of the
user's memory in flight finish first and later ones see its tombstone (migration 0010), which
every sink consults: a redelivery, a replay of the topic or ``memstream replay`` never store the
memory again.

- **An episode**: its event id is tombstoned (``memstream_episode_forgotten``) and its row
  deleted; its session-buffer entry is the caller's to remove, inside the same transaction
  (``SessionBuffers.forget_turn``). Its event stays in the event log (only an erasure deletes
  from it): a replay reads it, re-derives what else it gave — facts, a lesson, a skill run, which
  are memories of their own, forgotten by their own ids — and skips the episode.
- **A fact version**: each of its statements (the events that stated it, about its subject) is
  tombstoned (``memstream_statement_ref``: a hash of tenant, user, subject and event); the
  version and its edges are deleted, and the version before it takes its place
  (``unlink_version``) — current again when the forgotten one was current: the history a replay
  without those statements gives. A new event saying the same again is a new statement.

A memory forgotten before is answered from its tombstone (``repeated``), to the keys that could
see it; the audit log records each forgetting (who, what, when), never what the memory said.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row

from sinks.errors import SinkError
from sinks.postgres.access import forget_access
from sinks.postgres.audit import append_audit
from sinks.postgres.erasure import user_ref
from sinks.postgres.facts import renumber

Kind = Literal["episode", "fact"]
#: How long forgetting waits for the user's lock and the rows (in-flight writes, a replay's switch).
LOCK_TIMEOUT_S = 10.0


class NotOwnedError(SinkError):
    """The memory is visible to the caller (shared) but belongs to another agent."""

    def __init__(self, owner: str) -> None:
        super().__init__(f"this memory belongs to agent {owner}")
        self.owner = owner


@dataclass(frozen=True)
class BufferedTurn:
    """Where a forgotten turn may still be buffered: its user's session, and its event time."""

    user_id: str
    session_id: str
    event_time: datetime


@dataclass(frozen=True)
class Forgotten:
    kind: Kind
    memory_id: uuid.UUID
    #: episodic, procedural, summary (an episode), or fact
    memory_type: str
    forgotten_at: datetime
    #: It had been forgotten before: this repeats that answer, and nothing more was removed.
    repeated: bool
    #: An episodic turn: its session buffer may hold it.
    turn: BufferedTurn | None = None
    #: A fact: the version that took its place.
    restored_fact_id: uuid.UUID | None = None


@dataclass(frozen=True)
class _Memory:
    kind: Kind
    user_id: str
    agent_id: str
    shared: bool
    memory_type: str
    #: An episode's session and time.
    session_id: str | None = None
    at: datetime | None = None
    #: A fact version's subject and statements.
    subject_key: str | None = None
    sources: tuple[uuid.UUID, ...] = ()


_EPISODE = (
    "SELECT user_id, agent_id, shared, memory_type, session_id, created_at FROM episodes"
    " WHERE tenant_id = %s AND event_id = %s"
)
_FACT = "SELECT user_id, agent_id, shared, subject_key, sources FROM facts WHERE tenant_id = %s AND fact_id = %s"
_TOMBSTONE = (
    "SELECT kind, memory_type, agent_id, forgotten_at FROM forgotten_memories WHERE tenant_id = %s AND memory_id = %s"
)


async def _find(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, memory_id: uuid.UUID, *, lock: bool = False
) -> _Memory | None:
    """The episode or fact version of this id that the transaction may see (row-level security:
    its tenant's, and for an agent's key its own and shared memory)."""
    suffix = " FOR UPDATE" if lock else ""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_EPISODE + suffix, (tenant_id, memory_id))
        row = await cur.fetchone()
        if row is not None:
            return _Memory(
                "episode", row["user_id"], row["agent_id"], row["shared"], row["memory_type"],
                session_id=row["session_id"], at=row["created_at"],
            )  # fmt: skip
        await cur.execute(_FACT + suffix, (tenant_id, memory_id))
        row = await cur.fetchone()
    if row is None:
        return None
    return _Memory(
        "fact", row["user_id"], row["agent_id"], row["shared"], "fact",
        subject_key=row["subject_key"], sources=tuple(row["sources"]),
    )  # fmt: skip


def _check_owner(owner: str, agent_id: str | None) -> None:
    if agent_id is not None and owner != agent_id:
        raise NotOwnedError(owner)


async def _repeated(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, memory_id: uuid.UUID, agent_id: str | None
) -> Forgotten | None:
    """The answer to a memory forgotten before, if the caller could see it; else None."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_TOMBSTONE, (tenant_id, memory_id))
        row = await cur.fetchone()
    if row is None:
        return None
    _check_owner(row["agent_id"], agent_id)
    return Forgotten(row["kind"], memory_id, row["memory_type"], row["forgotten_at"], repeated=True)


async def forget_memory(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, memory_id: uuid.UUID, *, agent_id: str | None, actor: str
) -> Forgotten | None:
    """Forget the episode or fact version ``memory_id`` of the current tenant (the transaction
    acts for the caller: ``tenant_transaction`` with its agent). None when the caller can see no
    memory of that id, now or forgotten before; ``NotOwnedError`` when an agent's key names a
    shared memory of another agent. Audited as ``memory.delete`` by ``actor``."""
    found = await _find(conn, tenant_id, memory_id)
    if found is None:
        return await _repeated(conn, tenant_id, memory_id, agent_id)
    _check_owner(found.agent_id, agent_id)
    # Writers of the user's memory hold the lock shared: they finish first, and see the tombstone
    # after. A wait is bounded (a replay's switch holds the tables): LockNotAvailable, to retry.
    await conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(LOCK_TIMEOUT_S * 1000)}ms",))
    await conn.execute("SELECT pg_advisory_xact_lock(memstream_user_lock(%s, %s))", (tenant_id, found.user_id))
    found = await _find(conn, tenant_id, memory_id, lock=True)
    if found is None:  # forgotten (or erased) while this waited for the lock
        return await _repeated(conn, tenant_id, memory_id, agent_id)
    cur = await conn.execute(
        "INSERT INTO forgotten_memories (tenant_id, memory_id, kind, memory_type, agent_id, shared)"
        " VALUES (%s, %s, %s, %s, %s, %s) RETURNING forgotten_at",
        (tenant_id, memory_id, found.kind, found.memory_type, found.agent_id, found.shared),
    )
    row = await cur.fetchone()
    assert row is not None
    forgotten_at: datetime = row[0]
    detail: dict[str, Any] = {"kind": found.kind, "memory_type": found.memory_type,
                              "user_ref": user_ref(tenant_id, found.user_id)}  # fmt: skip
    if found.kind == "episode":
        await conn.execute("DELETE FROM episodes WHERE tenant_id = %s AND event_id = %s", (tenant_id, memory_id))
        turn = None
        if found.memory_type == "episodic" and found.session_id is not None and found.at is not None:
            turn = BufferedTurn(found.user_id, found.session_id, found.at)
        answer = Forgotten("episode", memory_id, found.memory_type, forgotten_at, repeated=False, turn=turn)
    else:
        assert found.subject_key is not None
        await conn.execute(
            "INSERT INTO forgotten_statements (tenant_id, statement, memory_id)"
            " SELECT %s, memstream_statement_ref(%s, %s, %s, e), %s FROM unnest(%s::uuid[]) AS e"
            " ON CONFLICT DO NOTHING",
            (tenant_id, tenant_id, found.user_id, found.subject_key, memory_id, list(found.sources)),
        )
        restored = await unlink_version(conn, tenant_id, found.user_id, found.subject_key, memory_id)
        detail.update(statements=len(found.sources), restored_fact_id=str(restored) if restored else None)
        answer = Forgotten("fact", memory_id, "fact", forgotten_at, repeated=False, restored_fact_id=restored)
    await forget_access(conn, found.kind, [memory_id])
    await append_audit(
        conn, tenant_id=tenant_id, actor=actor, action="memory.delete", subject=str(memory_id), detail=detail
    )
    return answer


async def forgotten_episodes(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, event_ids: Iterable[uuid.UUID]
) -> set[uuid.UUID]:
    """Which of these event ids of the current tenant name an episode forgotten on its own."""
    ids = list(event_ids)
    if not ids:
        return set()
    cur = await conn.execute(
        "SELECT e FROM unnest(%s::uuid[]) AS e WHERE memstream_episode_forgotten(%s, e)", (ids, tenant_id)
    )
    return {row[0] for row in await cur.fetchall()}


# --- a fact version out of its subject's history ---------------------------------------------


@dataclass(frozen=True)
class Gap:
    """What a version that is gone held of its subject's history: when it ended, and the
    version that followed it (None, None: it was the current one)."""

    valid_to: datetime | None
    superseded_by: uuid.UUID | None


#: A version's edges end when it ends; when it is current again they are open again, unless the
#: same triple of the same owner is current already (edges_current allows it once).
_EDGES_TO = """
UPDATE edges e SET valid_to = %(to)s
 WHERE e.tenant_id = %(tenant)s AND e.fact_id = %(fact)s AND e.valid_to IS DISTINCT FROM %(to)s
   AND (%(to)s::timestamptz IS NOT NULL OR NOT EXISTS (
        SELECT 1 FROM edges c
         WHERE c.tenant_id = e.tenant_id AND c.user_id = e.user_id AND c.valid_to IS NULL
           AND (CASE WHEN c.shared THEN '' ELSE c.agent_id END) = (CASE WHEN e.shared THEN '' ELSE e.agent_id END)
           AND c.subject = e.subject AND c.predicate = e.predicate AND c.object = e.object))
"""


async def take_over(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, user_id: str, subject_key: str, version_id: uuid.UUID,
    gap: Gap,
) -> None:  # fmt: skip
    """``version_id`` takes over the validity of the version that followed it, which is gone:
    it ends when that one ended (or is current again), and so do its edges; the subject's
    versions are renumbered."""
    await conn.execute(
        "UPDATE facts SET valid_to = %s, superseded_by = %s WHERE tenant_id = %s AND fact_id = %s",
        (gap.valid_to, gap.superseded_by, tenant_id, version_id),
    )
    await conn.execute(_EDGES_TO, {"tenant": tenant_id, "fact": version_id, "to": gap.valid_to})
    await renumber(conn, tenant_id, user_id, subject_key)


async def unlink_version(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, user_id: str, subject_key: str, fact_id: uuid.UUID
) -> uuid.UUID | None:
    """Delete one version of a subject with its edges (current tenant, user locked by the
    caller); the version before it takes its place (``take_over``). Returns that version (None
    when the deleted one was the first: the next one is the first now)."""
    cur = await conn.execute(
        "DELETE FROM facts WHERE tenant_id = %s AND fact_id = %s RETURNING valid_to, superseded_by",
        (tenant_id, fact_id),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    gap = Gap(row[0], row[1])
    await conn.execute("DELETE FROM edges WHERE tenant_id = %s AND fact_id = %s", (tenant_id, fact_id))
    cur = await conn.execute(
        "SELECT fact_id FROM facts WHERE tenant_id = %s AND user_id = %s AND subject_key = %s AND superseded_by = %s"
        " FOR UPDATE",
        (tenant_id, user_id, subject_key, fact_id),
    )
    before = await cur.fetchone()
    if before is None:
        await renumber(conn, tenant_id, user_id, subject_key)
        return None
    previous: uuid.UUID = before[0]
    await take_over(conn, tenant_id, user_id, subject_key, previous, gap)
    return previous
