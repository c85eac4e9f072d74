"""Maintenance runs: expiry, compaction of old episodes into daily summaries, forgetting.

Run by a timer in the long-term memory worker (``MEMSTREAM_MAINTENANCE_INTERVAL_S``) and by
``memstream maintain`` (which can also dry-run). One tenant at a time, under RLS.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg_pool import AsyncConnectionPool

from memstream.embedder import Embedder
from memstream.settings import Settings
from memstream.summarization.base import Summarizer, SummaryTurn
from memstream.tokens import TokenCounter
from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.event_log import maintenance_session
from sinks.postgres.maintenance import (
    FORGET_RULES,
    DayOfEpisodes,
    RetentionPolicy,
    count_expired,
    days_to_compact,
    delete_expired,
    episodes_of_day,
    forget,
    record_compaction,
    retention_policy,
    summary_event_id,
    tenants,
)
from sinks.postgres.tenancy import tenant_transaction

log = logging.getLogger(__name__)
MAINTENANCE_AGENT = "memstream"


@dataclass
class TenantReport:
    tenant_id: str
    dry_run: bool
    #: Rows past their expiry deleted (a dry run: counted, to be deleted).
    expired: dict[str, int] = field(default_factory=dict)
    compacted: list[dict[str, Any]] = field(default_factory=list)
    forgotten: dict[str, int] = field(default_factory=dict)
    forgotten_ids: list[str] = field(default_factory=list)
    #: The rules checked: the compaction window (the tenant's, else the deployment's) and each
    #: forgetting rule (null: unset, so it forgets nothing).
    policy: dict[str, Any] = field(default_factory=dict)
    #: What each step found, in words, above all why it did nothing (``memstream maintain``
    #: prints them on stderr).
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Maintainer:
    pool: AsyncConnectionPool
    settings: Settings
    summarizer: Summarizer
    embedder: Embedder
    tokens: TokenCounter
    #: False when a replay re-applies compactions the event log already records.
    log_compactions: bool = True

    async def tenants(self) -> list[str]:
        async with self.pool.connection() as conn:
            return await tenants(conn)

    async def run(self, tenant_id: str, *, dry_run: bool = False, compact: bool = True,
                  forget_: bool = True, expire: bool = True) -> TenantReport:  # fmt: skip
        report = TenantReport(tenant_id, dry_run)
        async with tenant_transaction(self.pool, tenant_id, actor="maintenance") as conn:
            policy = await retention_policy(conn, tenant_id)
            if expire:
                report.expired = await (count_expired(conn) if dry_run else delete_expired(conn, tenant_id))
        report.policy = self._policy(policy)
        if compact:
            report.compacted = await self._compact(tenant_id, policy, dry_run=dry_run)
        if forget_:
            async with tenant_transaction(self.pool, tenant_id, actor="maintenance") as conn:
                forgotten = await forget(conn, tenant_id, policy, dry_run=dry_run)
            report.forgotten = {rule: len(ids) for rule, ids in forgotten.by_rule.items()}
            report.forgotten_ids = forgotten.forgotten
        report.notes = findings(report, policy, compact=compact, forget_=forget_, expire=expire)
        return report

    def _policy(self, policy: RetentionPolicy) -> dict[str, Any]:
        return {
            "compact_after_days": policy.compact_after_days or self.settings.compact_after_days,
            "compact_after_days_from": "tenant" if policy.compact_after_days else "deployment",
            "compact_min_episodes": self.settings.compact_min_episodes,
            **{rule: getattr(policy, rule) for rule in FORGET_RULES},
            "decay_half_life_days": policy.decay_half_life_days,
        }

    async def _compact(self, tenant_id: str, policy: RetentionPolicy, *, dry_run: bool) -> list[dict[str, Any]]:
        days = policy.compact_after_days or self.settings.compact_after_days
        older_than = datetime.now(UTC) - timedelta(days=days)
        async with tenant_transaction(self.pool, tenant_id, actor="maintenance") as conn:
            candidates = await days_to_compact(
                conn, older_than=older_than, min_episodes=self.settings.compact_min_episodes, limit=100
            )
        done = []
        for user_id, day, visibility in candidates:
            async with tenant_transaction(self.pool, tenant_id, actor="maintenance") as conn:
                episodes = await episodes_of_day(
                    conn, user_id, day, cap=self.settings.summary_fold_max_turns, visibility=visibility
                )
            if not episodes.episodes:
                continue
            entry: dict[str, Any] = {
                "user_id": user_id,
                "day": day.isoformat(),
                "agent_id": visibility.agent_id,
                "shared": visibility.shared,
                "episodes": len(episodes.episodes),
            }
            if not dry_run:
                entry["summary_event_id"] = str(await self.compact_day(tenant_id, episodes))
            done.append(entry)
        return done

    async def compact_day(self, tenant_id: str, day: DayOfEpisodes) -> uuid.UUID:
        """Summarise one user's day of episodes (of one agent and visibility) into a ``summary``
        memory that agent sees exactly as it saw the originals, and archive them."""
        turns = [SummaryTurn(e["role"], e["content"], e["created_at"]) for e in day.episodes]
        summary = await self.summarizer.summarize(None, turns, max_tokens=self.settings.summary_max_tokens)
        first = day.episodes[0]
        summary_id = summary_event_id(tenant_id, day.user_id, day.day, first["event_id"])
        end = datetime(day.day.year, day.day.month, day.day.day, tzinfo=UTC) + timedelta(days=1, microseconds=-1)
        text = f"Summary of {day.day.isoformat()} ({len(turns)} turns): {summary.text}"
        agent = day.visibility.agent_id if day.visibility else MAINTENANCE_AGENT
        turn = Turn(
            event_id=summary_id, tenant_id=tenant_id, agent_id=agent, user_id=day.user_id,
            project_id=None, session_id=maintenance_session(day.day), role="system", content=text,
            event_time=end, tags=("summary",), metadata={"compacted_from": str(len(turns)), "day": day.day.isoformat()},
            shared=day.visibility.shared if day.visibility else all(e["shared"] for e in day.episodes),
            received_at=day.read_at,
        )  # fmt: skip
        vector = (await self.embedder.for_tenant(tenant_id).embed([text]))[0]
        tokens = self.tokens.for_tenant(tenant_id).count(text)
        episode = Episode(
            turn, vector, tokens, importance=max(float(e["importance"]) for e in day.episodes), memory_type="summary",
        )  # fmt: skip
        async with tenant_transaction(self.pool, tenant_id, actor="maintenance") as conn:
            await upsert_episodes(conn, [episode], model=self.embedder.model_name)
            await record_compaction(
                conn, tenant_id=tenant_id, day=day, summary_id=summary_id, summarizer=summary.summarizer,
                agent_id=agent, log_event=self.log_compactions,
            )  # fmt: skip
        log.info("compacted %d episodes of %s/%s into %s", len(turns), day.user_id, day.day, summary_id)
        return summary_id

    async def run_all(self, **options: Any) -> list[TenantReport]:
        return [await self.run(tenant, **options) for tenant in await self.tenants()]


def findings(report: TenantReport, policy: RetentionPolicy, *, compact: bool, forget_: bool, expire: bool) -> list[str]:
    """What each step found, said so that an empty report explains itself."""
    would = "would be " if report.dry_run else ""
    notes = []
    if not expire:
        notes.append("expiry: not asked for")
    else:
        counts = ", ".join(f"{n} {kind}" for kind, n in report.expired.items())
        notes.append(f"expiry: {counts} past their expiry{' (a run deletes them)' if report.dry_run else ', deleted'}")
    if not compact:
        notes.append("compaction: not asked for")
    elif report.compacted:
        notes.append(f"compaction: {len(report.compacted)} days of episodes {would}compacted into summaries")
    else:
        p = report.policy
        notes.append(
            f"compaction: no user has a day of {p['compact_min_episodes']} episodes or more older than"
            f" {p['compact_after_days']} days (the {p['compact_after_days_from']}'s window)"
        )
    if not forget_:
        notes.append("forgetting: not asked for")
    elif not policy.forgets:
        notes.append(
            f"forgetting: no retention rule is set for this tenant ({', '.join(FORGET_RULES)} are unset:"
            " PUT /v1/tenant/retention), so nothing is forgotten"
        )
    else:
        rules = ", ".join(
            f"{rule} {getattr(policy, rule)}" for rule in FORGET_RULES if getattr(policy, rule) is not None
        )
        notes.append(f"forgetting: {len(report.forgotten_ids)} episodes {would}forgotten by {rules}")
    return notes
