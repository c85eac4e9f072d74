"""Versioned semantic memory: one current version per (tenant, user, subject), history kept.

Applying a fact to what is stored:
- nothing current about its subject → insert version 1;
- the same statement, or one whose embedding is within ``merge_threshold`` cosine of the
  current version's → *merge*: no new version, the event joins the current one's sources
  (the top complaint about Mem0 and Graphiti is duplicates piling up);
- anything else → *supersede*: the current version's validity closes (``valid_to``,
  ``superseded_by``) and a new version opens, so "what did the user prefer in March" stays
  answerable. Edges (triples) follow their fact version: they close with it.

Versions follow the time a fact was stated, not the order facts arrive: two sessions of one
user are on different partitions and may be processed in either order. A fact stated before
the current version began goes into the history where it belongs — merged into the version
then in force, or splitting it (that version closes when the fact was stated; the fact's
version runs until the next one began) — and the subject's versions are renumbered, so the
current version is always the latest statement, whichever order they came in.

Every change is audited in the same transaction; a fact of an erased user, one whose statement
was forgotten (``DELETE /v1/memories/{id}``: ``sinks/postgres/forgetting.py``), or one whose
source event was already applied (a redelivery), changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector import Vector
from psycopg.rows import dict_row

from memstream.extraction.types import Triple
from sinks.postgres.audit import append_audit
from sinks.postgres.erasure import forgotten, lock_users

Action = Literal["insert", "merge", "supersede", "history", "duplicate", "erased", "forgotten"]
_EDGE_NAMESPACE = uuid.UUID("6f1c3c1e-4a53-4b0e-9d6a-6d656d737472")


@dataclass(frozen=True)
class FactRecord:
    fact_id: uuid.UUID
    tenant_id: str
    user_id: str
    agent_id: str
    session_id: str
    project_id: str | None
    source_event_id: uuid.UUID
    observed_at: datetime
    entity: str
    category: str
    scope: str
    summary: str
    importance: float
    triples: tuple[Triple, ...]
    shared: bool
    extractor: str
    embedding: npt.NDArray[np.float32]
    #: When memstream received the turn that stated it: what an erasure is ordered against.
    received_at: datetime | None = None

    @property
    def subject_key(self) -> str:
        return subject_key(self.scope, self.project_id, self.session_id, self.entity, private_to=self.owner)

    @property
    def owner(self) -> str | None:
        """The agent a private fact belongs to (None: shared with the tenant's agents)."""
        return None if self.shared else self.agent_id


@dataclass(frozen=True)
class Applied:
    action: Action
    fact_id: uuid.UUID
    previous_fact_id: uuid.UUID | None = None
    version: int = 0


def subject_key(
    scope: str, project_id: str | None, session_id: str, entity: str, *, private_to: str | None = None
) -> str:
    """What a fact is about: its entity, within its scope (a project's "database" and the
    user's global "database" are different subjects) — and, for a private fact, its agent's:
    one agent's private facts never supersede, merge with or reveal another agent's (nor a
    shared fact's); shared facts are one subject for all agents, who all see them. The agent
    is length-prefixed (``agent:<n>:<agent>:``), so no entity can imitate it (migration 0008)."""
    where = project_id if scope == "project" else session_id if scope == "session" else ""
    key = f"{scope}:{where}:{entity}"
    return key if private_to is None else f"agent:{len(private_to)}:{private_to}:{key}"


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".") == " ".join(b.lower().split()).rstrip(".")


def _cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
    return float(np.dot(a, b)) / denominator


_CURRENT = (
    "SELECT fact_id, summary, embedding, version, importance, sources, valid_from, valid_to FROM facts"
    " WHERE tenant_id = %s AND user_id = %s AND subject_key = %s AND valid_to IS NULL FOR UPDATE"
)
_INSERT = (
    "INSERT INTO facts (tenant_id, fact_id, user_id, agent_id, session_id, project_id, scope, subject_key,"
    " entity, category, summary, importance, shared, embedding, embedding_model, embedding_dim, version,"
    " valid_from, valid_to, superseded_by, change_reason, source_event_id, sources, extractor)"
    " VALUES (%(tenant)s, %(fact_id)s, %(user)s, %(agent)s, %(session)s, %(project)s, %(scope)s, %(key)s,"
    " %(entity)s, %(category)s, %(summary)s, %(importance)s, %(shared)s, %(embedding)s, %(model)s, %(dim)s,"
    " %(version)s, %(valid_from)s, %(valid_to)s, %(superseded_by)s, %(reason)s, %(source)s,"
    " ARRAY[%(source)s]::uuid[], %(extractor)s)"
)


async def _insert(
    conn: psycopg.AsyncConnection[Any],
    fact: FactRecord,
    *,
    model: str,
    version: int,
    reason: str,
    valid_to: datetime | None = None,
    superseded_by: uuid.UUID | None = None,
) -> None:
    await conn.execute(
        _INSERT,
        {
            "tenant": fact.tenant_id, "fact_id": fact.fact_id, "user": fact.user_id, "agent": fact.agent_id,
            "session": fact.session_id, "project": fact.project_id if fact.scope == "project" else None,
            "scope": fact.scope, "key": fact.subject_key, "entity": fact.entity, "category": fact.category,
            "summary": fact.summary, "importance": fact.importance, "shared": fact.shared,
            "embedding": fact.embedding, "model": model, "dim": int(fact.embedding.shape[0]),
            "version": version, "valid_from": fact.observed_at, "valid_to": valid_to, "superseded_by": superseded_by,
            "reason": reason, "source": fact.source_event_id, "extractor": fact.extractor,
        },
    )  # fmt: skip
    await _insert_edges(conn, fact, fact.fact_id, valid_to=valid_to)


_INSERT_EDGE = """
INSERT INTO edges (tenant_id, edge_id, user_id, agent_id, project_id, subject, predicate, object, fact_id,
                   source_event_id, shared, valid_from, valid_to)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT DO NOTHING
"""


def edge_id(fact_id: uuid.UUID, subject: str, predicate: str, obj: str) -> uuid.UUID:
    """Deterministic, and distinct for distinct triples: each part's ``\\`` and ``|`` are
    escaped (parts without them keep the ids edges had before)."""
    parts = "|".join(p.replace("\\", "\\\\").replace("|", "\\|") for p in (subject, predicate, obj))
    return uuid.uuid5(_EDGE_NAMESPACE, f"{fact_id}|{parts}")


async def _insert_edges(
    conn: psycopg.AsyncConnection[Any], fact: FactRecord, fact_id: uuid.UUID, *, valid_to: datetime | None = None
) -> None:
    """The fact's triples as edges of version ``fact_id`` (closed at ``valid_to`` for a past version;
    a current triple already there stays as it is)."""
    for t in fact.triples:
        await conn.execute(
            _INSERT_EDGE,
            (fact.tenant_id, edge_id(fact_id, t.subject, t.predicate, t.object), fact.user_id, fact.agent_id,
             fact.project_id, t.subject, t.predicate, t.object, fact_id, fact.source_event_id, fact.shared,
             fact.observed_at, valid_to),
        )  # fmt: skip


_VERSION = "SELECT fact_id, summary, embedding, version, importance, valid_from, valid_to, superseded_by FROM facts"
#: The version in force when a fact was stated (the last to begin at or before it).
_IN_FORCE = (
    _VERSION + " WHERE tenant_id = %s AND user_id = %s AND subject_key = %s AND valid_from <= %s"
    " ORDER BY valid_from DESC, fact_id DESC LIMIT 1 FOR UPDATE"
)
_FIRST = (
    _VERSION + " WHERE tenant_id = %s AND user_id = %s AND subject_key = %s"
    " ORDER BY valid_from, fact_id LIMIT 1 FOR UPDATE"
)
#: Versions numbered in the order they began; each reason names the version it superseded.
_RENUMBER = """
WITH ordered AS (
    SELECT fact_id, source_event_id, row_number() OVER w AS n, lag(fact_id) OVER w AS previous
    FROM facts WHERE tenant_id = %(tenant)s AND user_id = %(user)s AND subject_key = %(key)s
    WINDOW w AS (ORDER BY valid_from, fact_id)
), chain AS (
    SELECT fact_id, n, CASE WHEN previous IS NULL THEN 'stated in event ' || source_event_id
                            ELSE 'supersedes version ' || (n - 1) || ' (' || previous || '): stated in event '
                                 || source_event_id END AS reason
    FROM ordered
)
UPDATE facts f SET version = c.n, change_reason = c.reason
FROM chain c
WHERE f.tenant_id = %(tenant)s AND f.fact_id = c.fact_id
  AND (f.version, f.change_reason) IS DISTINCT FROM (c.n, c.reason)
"""


async def renumber(conn: psycopg.AsyncConnection[Any], tenant_id: str, user_id: str, subject_key: str) -> None:
    """Number a subject's versions in the order they began, each reason naming the one before."""
    await conn.execute(_RENUMBER, {"tenant": tenant_id, "user": user_id, "key": subject_key})


def _embedding(row: dict[str, Any]) -> npt.NDArray[np.float32]:
    stored = row["embedding"]
    return np.asarray(stored.to_numpy() if isinstance(stored, Vector) else stored, dtype=np.float32)


def _restates(version: dict[str, Any], fact: FactRecord, merge_threshold: float) -> bool:
    """The fact says what ``version`` says: the same statement, or a near-identical embedding."""
    embedding = _embedding(version)
    return _same(version["summary"], fact.summary) or (
        embedding.shape == fact.embedding.shape and _cosine(embedding, fact.embedding) >= merge_threshold
    )


async def _merge(
    conn: psycopg.AsyncConnection[Any], fact: FactRecord, version: dict[str, Any], audit: dict[str, Any]
) -> Applied:
    """The fact becomes one more source of ``version`` (its edges join that version's)."""
    await conn.execute(
        "UPDATE facts SET sources = array_append(sources, %s), importance = greatest(importance, %s)"
        " WHERE tenant_id = %s AND fact_id = %s",
        (fact.source_event_id, fact.importance, fact.tenant_id, version["fact_id"]),
    )
    await _insert_edges(conn, fact, version["fact_id"], valid_to=version["valid_to"])
    await append_audit(
        conn, tenant_id=fact.tenant_id, actor="worker", action="memory.merge",
        subject=str(version["fact_id"]), detail=audit,
    )  # fmt: skip
    return Applied("merge", version["fact_id"], version=version["version"])


async def _into_history(
    conn: psycopg.AsyncConnection[Any], fact: FactRecord, *, model: str, merge_threshold: float,
    audit: dict[str, Any],
) -> Applied:  # fmt: skip
    """A fact stated before the current version began (it arrived late): merged into the version
    then in force, or inserted as a past version between that one and the next."""
    key = (fact.tenant_id, fact.user_id, fact.subject_key)
    after: dict[str, Any] | None = None
    async with conn.cursor(row_factory=dict_row) as dcur:
        await dcur.execute(_IN_FORCE, (*key, fact.observed_at))
        before = await dcur.fetchone()
        if before is None:  # stated before the first version: it becomes the first
            await dcur.execute(_FIRST, key)
            after = await dcur.fetchone()
    if before is not None and _restates(before, fact, merge_threshold):
        return await _merge(conn, fact, before, audit)
    if after is not None and _restates(after, fact, merge_threshold):
        return await _merge(conn, fact, after, audit)  # the first version, stated earlier than it knew
    if before is not None:
        valid_to, superseded_by = before["valid_to"], before["superseded_by"]
        await conn.execute(
            "UPDATE facts SET valid_to = %s, superseded_by = %s WHERE tenant_id = %s AND fact_id = %s",
            (fact.observed_at, fact.fact_id, fact.tenant_id, before["fact_id"]),
        )
        await conn.execute(
            "UPDATE edges SET valid_to = %s WHERE tenant_id = %s AND fact_id = %s",
            (fact.observed_at, fact.tenant_id, before["fact_id"]),
        )
    else:
        assert after is not None  # a current version exists
        valid_to, superseded_by = after["valid_from"], after["fact_id"]
    await _insert(
        conn, fact, model=model, version=0, reason="", valid_to=valid_to, superseded_by=superseded_by
    )  # numbered with the rest below
    await renumber(conn, fact.tenant_id, fact.user_id, fact.subject_key)
    cur = await conn.execute(
        "SELECT version FROM facts WHERE tenant_id = %s AND fact_id = %s", (fact.tenant_id, fact.fact_id)
    )
    row = await cur.fetchone()
    version = int(row[0]) if row else 0
    previous = before["fact_id"] if before is not None else None
    await append_audit(
        conn, tenant_id=fact.tenant_id, actor="worker", action="memory.history", subject=str(fact.fact_id),
        detail={**audit, "version": version, "previous_fact_id": str(previous) if previous else None,
                "next_fact_id": str(superseded_by) if superseded_by else None},
    )  # fmt: skip
    return Applied("history", fact.fact_id, previous_fact_id=previous, version=version)


async def apply_fact(
    conn: psycopg.AsyncConnection[Any], fact: FactRecord, *, model: str, merge_threshold: float
) -> Applied:
    """Apply one fact of the current tenant (``act_as`` first, users locked by the caller)."""
    cur = await conn.execute(
        "SELECT 1 FROM facts WHERE tenant_id = %s AND (fact_id = %s OR"
        " (user_id = %s AND subject_key = %s AND %s = ANY(sources)))",
        (fact.tenant_id, fact.fact_id, fact.user_id, fact.subject_key, fact.source_event_id),
    )
    if await cur.fetchone() is not None:
        return Applied("duplicate", fact.fact_id)  # this event was applied before: a redelivery
    async with conn.cursor(row_factory=dict_row) as dcur:
        await dcur.execute(_CURRENT, (fact.tenant_id, fact.user_id, fact.subject_key))
        current = await dcur.fetchone()
    # Ids only: the audit log outlives an erasure, so it records that memory changed, never
    # what it says (no entity, no summary).
    audit = {"memory_type": "semantic", "source_event_id": str(fact.source_event_id), "extractor": fact.extractor}
    if current is None:
        await _insert(conn, fact, model=model, version=1, reason=f"stated in event {fact.source_event_id}")
        await append_audit(conn, tenant_id=fact.tenant_id, actor="worker", action="memory.insert",
                           subject=str(fact.fact_id), detail={**audit, "version": 1})  # fmt: skip
        return Applied("insert", fact.fact_id, version=1)
    if fact.observed_at < current["valid_from"]:  # stated before the current version: it arrived late
        return await _into_history(conn, fact, model=model, merge_threshold=merge_threshold, audit=audit)
    if _restates(current, fact, merge_threshold):
        return await _merge(conn, fact, current, audit)
    closes_at = fact.observed_at
    version = current["version"] + 1
    await conn.execute(
        "UPDATE facts SET valid_to = %s, superseded_by = %s WHERE tenant_id = %s AND fact_id = %s",
        (closes_at, fact.fact_id, fact.tenant_id, current["fact_id"]),
    )
    await conn.execute(
        "UPDATE edges SET valid_to = %s WHERE tenant_id = %s AND fact_id = %s AND valid_to IS NULL",
        (closes_at, fact.tenant_id, current["fact_id"]),
    )
    reason = f"supersedes version {current['version']} ({current['fact_id']}): stated in event {fact.source_event_id}"
    await _insert(conn, fact, model=model, version=version, reason=reason)
    await append_audit(
        conn, tenant_id=fact.tenant_id, actor="worker", action="memory.supersede", subject=str(fact.fact_id),
        detail={**audit, "version": version, "previous_fact_id": str(current["fact_id"])},
    )  # fmt: skip
    return Applied("supersede", fact.fact_id, previous_fact_id=current["fact_id"], version=version)


async def apply_facts(
    conn: psycopg.AsyncConnection[Any], facts: Sequence[FactRecord], *, model: str, merge_threshold: float
) -> list[Applied]:
    """Apply one tenant's facts in order (caller: ``act_as`` in a transaction)."""
    if not facts:
        return []
    tenant = facts[0].tenant_id
    users = {f.user_id for f in facts}
    await lock_users(conn, tenant, users)
    erased = await forgotten(conn, tenant, ((f.source_event_id, f.user_id, f.received_at) for f in facts))
    unsaid = await _forgotten_statements(conn, tenant, facts)
    applied = []
    for index, fact in enumerate(facts):
        if fact.source_event_id in erased:
            applied.append(Applied("erased", fact.fact_id))
            continue
        if index in unsaid:
            applied.append(Applied("forgotten", fact.fact_id))
            continue
        applied.append(await apply_fact(conn, fact, model=model, merge_threshold=merge_threshold))
    return applied


async def _forgotten_statements(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, facts: Sequence[FactRecord]
) -> set[int]:
    """The positions of the facts whose statement (their event about their subject) was
    forgotten (``memstream_statement_forgotten``, migration 0010)."""
    cur = await conn.execute(
        "SELECT i.n - 1 FROM unnest(%s::text[], %s::text[], %s::uuid[])"
        " WITH ORDINALITY AS i(user_id, subject, event, n)"
        " WHERE memstream_statement_forgotten(%s, i.user_id, i.subject, i.event)",
        ([f.user_id for f in facts], [f.subject_key for f in facts], [f.source_event_id for f in facts], tenant_id),
    )
    return {int(row[0]) for row in await cur.fetchall()}
