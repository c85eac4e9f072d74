"""Per-tenant settings (the privacy policy), and a short-lived cache of them for the hot paths."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from memstream.privacy import DEFAULT_POLICY, PrivacyPolicy
from sinks.postgres.tenancy import tenant_transaction


async def get_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str) -> PrivacyPolicy:
    cur = await conn.execute(
        "SELECT redact_email, redact_phone FROM tenant_settings WHERE tenant_id = %s", (tenant_id,)
    )
    row = await cur.fetchone()
    return PrivacyPolicy(redact_email=row[0], redact_phone=row[1]) if row else DEFAULT_POLICY


async def put_policy(conn: psycopg.AsyncConnection[Any], tenant_id: str, policy: PrivacyPolicy) -> None:
    await conn.execute(
        "INSERT INTO tenant_settings (tenant_id, redact_email, redact_phone) VALUES (%s, %s, %s)"
        " ON CONFLICT (tenant_id) DO UPDATE SET redact_email = EXCLUDED.redact_email,"
        " redact_phone = EXCLUDED.redact_phone, updated_at = now()",
        (tenant_id, policy.redact_email, policy.redact_phone),
    )


class PolicyCache:
    """Tenant policies for ``ttl_s`` seconds: a policy change reaches every process within that."""

    def __init__(self, pool: AsyncConnectionPool, *, ttl_s: float = 10.0) -> None:
        self.pool = pool
        self.ttl_s = ttl_s
        self._entries: dict[str, tuple[float, PrivacyPolicy]] = {}

    async def get(self, tenant_id: str) -> PrivacyPolicy:
        now = time.monotonic()
        hit = self._entries.get(tenant_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        async with tenant_transaction(self.pool, tenant_id) as conn:
            policy = await get_policy(conn, tenant_id)
        if len(self._entries) > 10_000:
            self._entries.clear()
        self._entries[tenant_id] = (now + self.ttl_s, policy)
        return policy

    def forget(self, tenant_id: str) -> None:
        self._entries.pop(tenant_id, None)
