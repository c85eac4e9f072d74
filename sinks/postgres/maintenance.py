"""Maintenance of long-term memory, one tenant at a time under RLS: expiry, compaction of old
episodes into daily summaries, and forgetting by the tenant's retention policy.

Every step is audited; compaction is also recorded in the event log (a ``system`` event
from ``memstream.maintenance``), so the log says what happened to the memory it projects.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from sinks.postgres.access import AccessKind, forget_access
from sinks.postgres.audit import append_audit
from sinks.postgres.event_log import MAINTENANCE_TOPIC, maintenance_session

COMPACTION_NAMESPACE = uuid.UUID("9a4e1f0c-5b2d-4c7e-8f3a-6d656d636f6d")
AUDIT_ID_LIMIT = 1000


#: The range of a retention setting in days (and of a decay half-life), what date arithmetic
#: can do with it: the gateway refuses more; a value stored before is read within it.
MAX_DAYS = 36_500
MIN_HALF_LIFE_DAYS = 0.01


def _days(value: int | None) -> int | None:
    return None if value is None else min(value, MAX_DAYS)


#: The forgetting rules of a retention policy (``forget``); with none set, nothing is forgotten.
FORGET_RULES = ("min_importance", "max_age_days", "unaccessed_days", "max_per_user")


@dataclass(frozen=True)
class RetentionPolicy:
    """Per tenant (``tenant_settings``); None switches a rule off."""

    compact_after_days: int | None = None
    min_importance: float | None = None
    max_age_days: int | None = None
    max_per_user: int | None = None
    unaccessed_days: int | None = None
    decay_half_life_days: float | None = None

    @property
    def forgets(self) -> bool:
        """Whether any forgetting rule is set (``FORGET_RULES``)."""
        return any(getattr(self, rule) is not None for rule in FORGET_RULES)

    @property
    def decay_lambda(self) -> float:
        """λ of importance·exp(-λ·age_days): ln 2 / half-life (0 without decay)."""
        return math.log(2) / self.decay_half_life_days if self.decay_half_life_days else 0.0


async def retention_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> RetentionPolicy:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "SELECT compact_after_days, min_importance, max_age_days, max_per_user, unaccessed_days,"
            " decay_half_life_days FROM tenant_settings WHERE tenant_id = %s",
            (tenant_id,),
        )
        row = await cur.fetchone()
    if not row:
        return RetentionPolicy()
    half_life = row["decay_half_life_days"]
    return RetentionPolicy(
        compact_after_days=_days(row["compact_after_days"]), min_importance=row["min_importance"],
        max_age_days=_days(row["max_age_days"]), max_per_user=row["max_per_user"],
        unaccessed_days=_days(row["unaccessed_days"]),
        decay_half_life_days=None if half_life is None else min(max(half_life, MIN_HALF_LIFE_DAYS), MAX_DAYS),
    )  # fmt: skip


async def put_retention_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str, policy: RetentionPolicy) -> None:
    await conn.execute(
        "INSERT INTO tenant_settings (tenant_id, compact_after_days, min_importance, max_age_days, max_per_user,"
        " unaccessed_days, decay_half_life_days) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (tenant_id) DO UPDATE SET compact_after_days = EXCLUDED.compact_after_days,"
        " min_importance = EXCLUDED.min_importance, max_age_days = EXCLUDED.max_age_days,"
        " max_per_user = EXCLUDED.max_per_user, unaccessed_days = EXCLUDED.unaccessed_days,"
        " decay_half_life_days = EXCLUDED.decay_half_life_days, updated_at = now()",
        (tenant_id, policy.compact_after_days, policy.min_importance, policy.max_age_days, policy.max_per_user,
         policy.unaccessed_days, policy.decay_half_life_days),
    )  # fmt: skip


async def tenants(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    cur = await conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")
    return [row[0] for row in await cur.fetchall()]


async def register_tenants(conn: psycopg.AsyncConnection[Any], tenant_ids: set[str]) -> None:
    if tenant_ids:
        await conn.execute(
            "INSERT INTO tenants (tenant_id) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING",
            (sorted(tenant_ids),),
        )


# --- expiry -------------------------------------------------------------------------------


async def count_expired(conn: psycopg.AsyncConnection[Any]) -> dict[str, int]:
    """What ``delete_expired`` would delete now, counted (a dry run), in the same shape."""
    cur = await conn.execute(
        "SELECT (SELECT count(*) FROM episodes WHERE expires_at <= now()),"
        " (SELECT count(*) FROM facts WHERE expires_at <= now())"
    )
    row = await cur.fetchone()
    episodes, facts = row if row else (0, 0)
    return {"episodes": int(episodes), "facts": int(facts)}


async def delete_expired(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> dict[str, int]:
    """Rows past ``expires_at`` (already never served) are deleted; audited."""
    counts = {}
    expired: tuple[tuple[AccessKind, str], ...] = (
        ("episode", "DELETE FROM episodes WHERE expires_at <= now() RETURNING event_id"),
        ("fact", "DELETE FROM facts WHERE expires_at <= now() RETURNING fact_id"),
    )
    for kind, statement in expired:
        gone = [row[0] for row in await (await conn.execute(statement)).fetchall()]
        await forget_access(conn, kind, gone)
        counts[f"{kind}s"] = len(gone)
    if any(counts.values()):
        await append_audit(conn, tenant_id=tenant_id, actor="maintenance", action="memory.expire", detail=counts)
    return counts


# --- compaction ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Visibility:
    """Who may see a group of episodes: one agent's private ones, or one agent's shared ones.
    A day is compacted per visibility, so a summary is seen by exactly who saw its originals."""

    agent_id: str
    shared: bool


@dataclass(frozen=True)
class DayOfEpisodes:
    user_id: str
    day: date
    episodes: list[dict[str, Any]]
    #: None: every agent's episodes of the day (compactions logged before days were split).
    visibility: Visibility | None = None
    #: Just before they were read: the summary of them is ordered against an erasure by it.
    read_at: datetime | None = None


async def days_to_compact(
    conn: psycopg.AsyncConnection[Any], *, older_than: datetime, min_episodes: int, limit: int
) -> list[tuple[str, date, Visibility]]:
    """(user, day, visibility) groups of the current tenant with episodes older than the window."""
    cur = await conn.execute(
        "SELECT user_id, (created_at AT TIME ZONE 'UTC')::date AS day, agent_id, shared FROM episodes"
        " WHERE archived_at IS NULL AND memory_type = 'episodic' AND created_at < %s"
        " GROUP BY user_id, day, agent_id, shared HAVING count(*) >= %s"
        " ORDER BY day, user_id, agent_id, shared LIMIT %s",
        (older_than, min_episodes, limit),
    )
    return [(row[0], row[1], Visibility(row[2], bool(row[3]))) for row in await cur.fetchall()]


async def episodes_of_day(
    conn: psycopg.AsyncConnection[Any], user_id: str, day: date, *, cap: int, visibility: Visibility | None = None
) -> DayOfEpisodes:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    agent, shared = (visibility.agent_id, visibility.shared) if visibility else (None, None)
    read_at = datetime.now(UTC)
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "SELECT event_id, agent_id, project_id, session_id, role, content, importance, created_at, shared"
            " FROM episodes WHERE user_id = %s AND archived_at IS NULL AND memory_type = 'episodic'"
            " AND created_at >= %s AND created_at < %s"
            " AND (%s::text IS NULL OR (agent_id = %s AND shared = %s)) ORDER BY created_at LIMIT %s",
            (user_id, start, start + timedelta(days=1), agent, agent, shared, cap),
        )
        return DayOfEpisodes(user_id, day, await cur.fetchall(), visibility, read_at)


def summary_event_id(tenant_id: str, user_id: str, day: date, first: uuid.UUID) -> uuid.UUID:
    """Deterministic: compacting the same day's same episodes again names the same summary."""
    return uuid.uuid5(COMPACTION_NAMESPACE, f"{tenant_id}|{user_id}|{day.isoformat()}|{first}")


def compaction_record_id(summary_id: uuid.UUID) -> uuid.UUID:
    """The event id of a compaction's record in the event log (deterministic, like the summary's)."""
    return uuid.uuid5(COMPACTION_NAMESPACE, f"log|{summary_id}")


async def record_compaction(
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    day: DayOfEpisodes,
    summary_id: uuid.UUID,
    summarizer: str,
    agent_id: str,
    log_event: bool = True,
) -> None:
    """Archive the originals behind the summary episode (inserted by the caller in the same
    transaction), and record it in the event log (unless ``log_event`` is false: a replay
    re-applies a compaction the log already holds) and the audit log."""
    ids = [e["event_id"] for e in day.episodes]
    await conn.execute(
        "UPDATE episodes SET archived_at = now(), archived_into = %s WHERE event_id = ANY(%s) AND archived_at IS NULL",
        (summary_id, ids),
    )
    detail = {
        "kind": "compaction", "day": day.day.isoformat(), "summary_event_id": str(summary_id),
        "archived": len(ids), "summarizer": summarizer,
    }  # fmt: skip
    if day.visibility is not None:
        detail.update(agent_id=day.visibility.agent_id, shared=day.visibility.shared)
    if log_event:
        await _log_compaction(conn, tenant_id=tenant_id, day=day, summary_id=summary_id, agent_id=agent_id,
                              detail=detail, archived=len(ids))  # fmt: skip
    await append_audit(
        conn, tenant_id=tenant_id, actor="maintenance", action="memory.compaction", subject=str(summary_id),
        detail={**detail, "event_ids": [str(i) for i in ids[:AUDIT_ID_LIMIT]]},
    )  # fmt: skip


async def _log_compaction(
    conn: psycopg.AsyncConnection[Any], *, tenant_id: str, day: DayOfEpisodes, summary_id: uuid.UUID,
    agent_id: str, detail: dict[str, Any], archived: int,
) -> None:  # fmt: skip
    end = datetime(day.day.year, day.day.month, day.day.day, tzinfo=UTC) + timedelta(days=1) - timedelta(microseconds=1)
    await conn.execute(
        "INSERT INTO event_log (tenant_id, event_id, agent_id, user_id, project_id, session_id, role, content,"
        " event_time, metadata, shared, schema_id, source_topic, source_partition, source_offset)"
        " VALUES (%s, %s, %s, %s, NULL, %s, 'system', %s, %s, %s, %s, 0, %s, -1, -1)"
        " ON CONFLICT (tenant_id, event_id) DO NOTHING",
        (tenant_id, compaction_record_id(summary_id), agent_id, day.user_id,
         maintenance_session(day.day),
         f"compaction: {archived} episodes of {day.day.isoformat()} archived behind summary {summary_id}",
         end, Jsonb({k: str(v) for k, v in detail.items()}), day.visibility.shared if day.visibility else False,
         MAINTENANCE_TOPIC),
    )  # fmt: skip


# --- forgetting -----------------------------------------------------------------------------


@dataclass
class ForgetReport:
    tenant_id: str
    dry_run: bool
    #: rule -> event ids it selects (an episode may be selected by several rules)
    by_rule: dict[str, list[str]] = field(default_factory=dict)

    @property
    def forgotten(self) -> list[str]:
        return sorted({i for ids in self.by_rule.values() for i in ids})


#: Each episode with its decayed score, importance·exp(-λ·age in days) (the exponent floored
#: at -700: a far smaller score is as good as 0, and exp would underflow), and when it was last
#: touched (read, or else written).
_MIN_IMPORTANCE = """
SELECT event_id FROM episodes
WHERE importance * exp(greatest(-700.0, -%(lambda)s * extract(epoch FROM now() - created_at) / 86400.0)) < %(min)s
"""
_UNACCESSED = """
SELECT e.event_id FROM episodes e
LEFT JOIN memory_access a ON a.tenant_id = e.tenant_id AND a.kind = 'episode' AND a.memory_id = e.event_id
WHERE coalesce(a.last_accessed_at, e.ingested_at) < now() - make_interval(days => %(days)s)
"""
_OVER_QUOTA = """
SELECT event_id FROM (
    SELECT event_id, row_number() OVER (
        PARTITION BY user_id
        ORDER BY importance * exp(greatest(-700.0, -%(lambda)s * extract(epoch FROM now() - created_at) / 86400.0))
                 DESC,
                 created_at DESC
    ) AS rank
    FROM episodes
) ranked WHERE rank > %(max)s
"""


async def forget(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, policy: RetentionPolicy, *, dry_run: bool
) -> ForgetReport:
    """Apply the retention rules to the current tenant's episodes (or only report, dry run).

    - ``min_importance``: decayed importance, importance·exp(-λ·age in days), below it;
    - ``max_age_days``: older than that;
    - ``unaccessed_days``: not read (nor written) for that long;
    - ``max_per_user``: beyond that many per user, the lowest decayed scores go first.
    """
    report = ForgetReport(tenant_id, dry_run)
    params = {"lambda": policy.decay_lambda}
    async with conn.cursor() as cur:
        if policy.min_importance is not None:
            await cur.execute(_MIN_IMPORTANCE, {**params, "min": policy.min_importance})
            report.by_rule["min_importance"] = [str(r[0]) for r in await cur.fetchall()]
        if policy.max_age_days is not None:
            await cur.execute(
                "SELECT event_id FROM episodes WHERE created_at < now() - make_interval(days => %s)",
                (policy.max_age_days,),
            )
            report.by_rule["max_age_days"] = [str(r[0]) for r in await cur.fetchall()]
        if policy.unaccessed_days is not None:
            await cur.execute(_UNACCESSED, {"days": policy.unaccessed_days})
            report.by_rule["unaccessed_days"] = [str(r[0]) for r in await cur.fetchall()]
        if policy.max_per_user is not None:
            await cur.execute(_OVER_QUOTA, {**params, "max": policy.max_per_user})
            report.by_rule["max_per_user"] = [str(r[0]) for r in await cur.fetchall()]
    doomed = report.forgotten
    if doomed and not dry_run:
        await conn.execute("DELETE FROM episodes WHERE event_id = ANY(%s::uuid[])", (doomed,))
        await forget_access(conn, "episode", [uuid.UUID(i) for i in doomed])
        await append_audit(
            conn, tenant_id=tenant_id, actor="maintenance", action="memory.forget",
            detail={"count": len(doomed), "rules": {k: len(v) for k, v in report.by_rule.items()},
                    "event_ids": doomed[:AUDIT_ID_LIMIT]},
        )  # fmt: skip
    return report
