"""Gateway API keys: created, listed and revoked by an operator (the owner role); the
gateway resolves one key id at a time through ``memstream_api_key()``.

A key reads ``msk_<key id>_<secret>``. Only SHA-256 of the secret is stored: the secret
is 32 random bytes, so a fast hash is the right tool (there is nothing to brute-force).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from schemas.turns import IDENTIFIER_RULE, TENANT_ID, TENANT_ID_RULE, is_identifier
from sinks.errors import SinkError

SCOPES = ("ingest", "read", "admin", "system")
PREFIX = "msk"


class ApiKeyError(SinkError):
    """A key cannot be created or changed as asked."""


@dataclass(frozen=True)
class KeyRecord:
    key_id: str
    tenant_id: str
    agent_id: str | None
    scopes: tuple[str, ...]
    secret_sha256: bytes
    rate_limit_per_s: float | None
    revoked: bool

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(hashlib.sha256(secret.encode()).digest(), self.secret_sha256)


def split_key(raw: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed key, else None."""
    prefix, sep, rest = raw.partition("_")
    key_id, sep2, secret = rest.partition("_")
    if prefix != PREFIX or not sep or not sep2 or len(key_id) != 16 or len(secret) < 20:
        return None
    return key_id, secret


async def lookup_key(conn: psycopg.AsyncConnection[Any], key_id: str) -> KeyRecord | None:
    cur = await conn.execute("SELECT * FROM memstream_api_key(%s)", (key_id,))
    row = await cur.fetchone()
    if row is None:
        return None
    tenant, agent, scopes, digest, rate, revoked = row
    return KeyRecord(key_id, tenant, agent, tuple(scopes), bytes(digest), rate, bool(revoked))


def _check(tenant_id: str, agent_id: str | None, scopes: Sequence[str]) -> None:
    if not TENANT_ID.fullmatch(tenant_id):
        raise ApiKeyError(f"a tenant id must be {TENANT_ID_RULE}")
    if agent_id is not None and not is_identifier(agent_id):
        raise ApiKeyError(f"an agent id must be {IDENTIFIER_RULE}")
    unknown = sorted(set(scopes) - set(SCOPES))
    if not scopes or unknown:
        raise ApiKeyError(f"scopes must be some of {', '.join(SCOPES)} (got {', '.join(scopes) or 'none'})")


def create_key(
    conn: psycopg.Connection[Any],
    *,
    tenant_id: str,
    scopes: Sequence[str],
    agent_id: str | None = None,
    name: str = "",
    rate_limit_per_s: float | None = None,
) -> str:
    """Create a key (as the owner role) and return it; it is never shown again."""
    _check(tenant_id, agent_id, scopes)
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    with conn.transaction():
        digest = hashlib.sha256(secret.encode()).digest()
        conn.execute(
            "INSERT INTO api_keys (key_id, tenant_id, agent_id, scopes, secret_sha256, name,"
            " rate_limit_per_s) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (key_id, tenant_id, agent_id, sorted(set(scopes)), digest, name, rate_limit_per_s),
        )
        _audit(conn, tenant_id, "api_key.create", key_id, {"agent_id": agent_id, "scopes": sorted(set(scopes))})
    return f"{PREFIX}_{key_id}_{secret}"


def revoke_key(conn: psycopg.Connection[Any], key_id: str) -> bool:
    with conn.transaction():
        row = conn.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_id = %s AND revoked_at IS NULL RETURNING tenant_id",
            (key_id,),
        ).fetchone()
        if row is not None:
            _audit(conn, row[0], "api_key.revoke", key_id, {})
    return row is not None


@dataclass(frozen=True)
class KeyListing:
    key_id: str
    tenant_id: str
    agent_id: str | None
    scopes: list[str]
    name: str
    created_at: datetime
    revoked_at: datetime | None


def list_keys(conn: psycopg.Connection[Any], tenant_id: str | None = None) -> list[KeyListing]:
    rows = conn.execute(
        "SELECT key_id, tenant_id, agent_id, scopes, name, created_at, revoked_at FROM api_keys"
        " WHERE %(t)s::text IS NULL OR tenant_id = %(t)s ORDER BY tenant_id, created_at",
        {"t": tenant_id},
    ).fetchall()
    return [KeyListing(*row) for row in rows]


def _audit(conn: psycopg.Connection[Any], tenant_id: str, action: str, key_id: str, detail: dict[str, Any]) -> None:
    conn.execute("SELECT set_config('app.tenant_id', %s, true)", (tenant_id,))
    conn.execute(
        "INSERT INTO audit_log (tenant_id, actor, action, subject, detail) VALUES (%s, 'operator', %s, %s, %s)",
        (tenant_id, action, key_id, Jsonb(detail)),
    )
