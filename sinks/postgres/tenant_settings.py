"""Per-tenant settings (privacy policy, ranking weights), and a short-lived cache of them for
the hot paths."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from memstream.privacy import DEFAULT_POLICY, PrivacyPolicy
from sinks.postgres.tenancy import tenant_transaction


@dataclass(frozen=True)
class RankingSettings:
    """None: the deployment's default (MEMSTREAM_RRF_*_WEIGHT, MEMSTREAM_SEARCH_HALF_LIFE_DAYS)."""

    vector_weight: float | None = None
    text_weight: float | None = None
    half_life_days: float | None = None


@dataclass(frozen=True)
class TenantSettings:
    privacy: PrivacyPolicy = DEFAULT_POLICY
    ranking: RankingSettings = RankingSettings()
    #: The tenant's text-search configuration; None: the deployment's (MEMSTREAM_TEXT_SEARCH_CONFIG).
    text_search_config: str | None = None


async def get_tenant_settings(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> TenantSettings:
    cur = await conn.execute(
        "SELECT redact_email, redact_phone, rrf_vector_weight, rrf_text_weight, search_half_life_days,"
        " text_search_config::text FROM tenant_settings WHERE tenant_id = %s",
        (tenant_id,),
    )
    row = await cur.fetchone()
    if row is None:
        return TenantSettings()
    return TenantSettings(PrivacyPolicy(row[0], row[1]), RankingSettings(row[2], row[3], row[4]), row[5])


async def get_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> PrivacyPolicy:
    return (await get_tenant_settings(conn, tenant_id)).privacy


async def put_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str, policy: PrivacyPolicy) -> None:
    await conn.execute(
        "INSERT INTO tenant_settings (tenant_id, redact_email, redact_phone) VALUES (%s, %s, %s)"
        " ON CONFLICT (tenant_id) DO UPDATE SET redact_email = EXCLUDED.redact_email,"
        " redact_phone = EXCLUDED.redact_phone, updated_at = now()",
        (tenant_id, policy.redact_email, policy.redact_phone),
    )


async def put_ranking(conn: psycopg.AsyncConnection[Any], tenant_id: str, ranking: RankingSettings) -> None:
    await conn.execute(
        "INSERT INTO tenant_settings (tenant_id, rrf_vector_weight, rrf_text_weight, search_half_life_days)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (tenant_id) DO UPDATE SET"
        " rrf_vector_weight = EXCLUDED.rrf_vector_weight, rrf_text_weight = EXCLUDED.rrf_text_weight,"
        " search_half_life_days = EXCLUDED.search_half_life_days, updated_at = now()",
        (tenant_id, ranking.vector_weight, ranking.text_weight, ranking.half_life_days),
    )


async def put_text_search_config(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, config: str | None, *, effective: str
) -> dict[str, int]:
    """Set the tenant's configuration (None: the deployment's, ``effective``) and re-index its
    episodes and facts in ``effective``, in the caller's transaction; returns rows re-indexed."""
    await conn.execute(
        "INSERT INTO tenant_settings (tenant_id, text_search_config) VALUES (%s, %s::regconfig)"
        " ON CONFLICT (tenant_id) DO UPDATE SET text_search_config = EXCLUDED.text_search_config, updated_at = now()",
        (tenant_id, config),
    )
    counts = {}
    for table in ("episodes", "facts"):
        cur = await conn.execute(
            sql.SQL(
                "UPDATE {} SET text_config = %s::regconfig WHERE tenant_id = %s AND text_config <> %s::regconfig"
            ).format(sql.Identifier(table)),
            (effective, tenant_id, effective),
        )
        counts[table] = cur.rowcount
    return counts


class PolicyCache:
    """Tenant settings for ``ttl_s`` seconds: a change reaches every process within that (the
    gateway forgets a tenant's entry at once when it is the one changing it).

    A caller that already holds a connection in the tenant's transaction passes it: taking a
    second one from the same pool while holding the first deadlocks once every request of a
    burst does it together. Concurrent misses for one tenant share one read.
    """

    def __init__(self, pool: AsyncConnectionPool, *, ttl_s: float = 10.0) -> None:
        self.pool = pool
        self.ttl_s = ttl_s
        self._entries: dict[str, tuple[float, TenantSettings]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: Lookups answered from the cache, and lookups that read Postgres (the cache-hit metric).
        self.hits = 0
        self.misses = 0

    async def settings(self, tenant_id: str, conn: psycopg.AsyncConnection[Any] | None = None) -> TenantSettings:
        if (fresh := self._fresh(tenant_id)) is not None:
            self.hits += 1
            return fresh
        if conn is not None:
            self.misses += 1
            return self._store(tenant_id, await get_tenant_settings(conn, tenant_id))
        async with self._locks.setdefault(tenant_id, asyncio.Lock()):
            if (fresh := self._fresh(tenant_id)) is not None:  # loaded while this one waited
                self.hits += 1
                return fresh
            self.misses += 1
            async with tenant_transaction(self.pool, tenant_id) as own:
                return self._store(tenant_id, await get_tenant_settings(own, tenant_id))

    def _fresh(self, tenant_id: str) -> TenantSettings | None:
        hit = self._entries.get(tenant_id)
        return hit[1] if hit is not None and hit[0] > time.monotonic() else None

    def _store(self, tenant_id: str, found: TenantSettings) -> TenantSettings:
        if len(self._entries) > 10_000:
            self._entries.clear()
            self._locks = {t: lock for t, lock in self._locks.items() if lock.locked()}
        self._entries[tenant_id] = (time.monotonic() + self.ttl_s, found)
        return found

    async def get(self, tenant_id: str) -> PrivacyPolicy:
        return (await self.settings(tenant_id)).privacy

    def forget(self, tenant_id: str) -> None:
        self._entries.pop(tenant_id, None)
