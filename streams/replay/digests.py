"""Digests of the projections of a replay's scope, in the live tables or a shadow schema."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import psycopg

from sinks.postgres.queries.digest import DIGESTED, table_digest
from sinks.postgres.tenancy import act_as

Digest = dict[str, dict[str, Any]]


async def digest(
    conn: psycopg.AsyncConnection[Any], schema: str, tenants: Sequence[str], user_id: str | None
) -> Digest:
    """Per projection: its rows in the scope and a sha256 over every tenant's row digest."""
    parts: dict[str, list[str]] = defaultdict(list)
    rows: dict[str, int] = defaultdict(int)
    async with conn.transaction():
        for tenant in sorted(tenants):
            await act_as(conn, tenant, actor="replay")
            for name, *_ in DIGESTED:
                count, md5 = await table_digest(conn, schema, name, tenant, user_id)
                rows[name] += count
                if count:
                    parts[name].append(f"{tenant}\x1f{count}\x1f{md5}")
    return {
        name: {"rows": rows[name], "sha256": hashlib.sha256("\n".join(parts[name]).encode()).hexdigest()}
        for name, *_ in DIGESTED
        if name in rows
    }


def differences(rebuilt: Digest, live: Digest) -> list[str]:
    """The projections whose digests differ (or that only one side has)."""
    return sorted(name for name in rebuilt.keys() | live.keys() if rebuilt.get(name) != live.get(name))
