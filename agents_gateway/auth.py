"""Who is calling: API keys (tenant, optional agent, scopes), checked on every request,
with a per-key rate limit. The tenant always comes from the key, never from the body."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from psycopg_pool import AsyncConnectionPool

from agents_gateway.errors import ApiError
from memstream.settings import Settings
from sinks.postgres.api_keys import KeyRecord, lookup_key, split_key
from sinks.redis.rate_limit import RateLimiter

Scope = str


@dataclass(frozen=True)
class Principal:
    key_id: str
    tenant_id: str
    #: Set when the key is bound to one agent: it then sees its own and shared memory only.
    agent_id: str | None
    scopes: frozenset[Scope]

    def check_tenant(self, claimed: str | None) -> str:
        """The key's tenant; a request naming another tenant is refused."""
        if claimed is not None and claimed != self.tenant_id:
            raise ApiError(403, "wrong_tenant", "this key belongs to another tenant")
        return self.tenant_id

    def check_agent(self, claimed: str | None) -> str | None:
        """The agent a request acts for: the key's own, if it is bound to one."""
        if self.agent_id is not None and claimed is not None and claimed != self.agent_id:
            raise ApiError(403, "wrong_agent", f"this key may only act for agent {self.agent_id}")
        return self.agent_id or claimed


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})


def presented_key(request: Request) -> str:
    header = request.headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise _unauthorized("use 'Authorization: Bearer <api key>'")
        return value.strip()
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    raise _unauthorized("an API key is required (Authorization: Bearer <key> or X-API-Key)")


class Authenticator:
    """Resolves keys (cached for ``auth_cache_s``: a revocation takes effect within that) and
    applies the per-key rate limit."""

    def __init__(self, pool: AsyncConnectionPool, limiter: RateLimiter, settings: Settings) -> None:
        self.pool = pool
        self.limiter = limiter
        self.settings = settings
        self._cache: dict[str, tuple[float, KeyRecord | None]] = {}
        #: Key lookups answered from the cache, and lookups that read Postgres (the cache-hit metric).
        self.hits = 0
        self.misses = 0

    async def _record(self, key_id: str) -> KeyRecord | None:
        now = time.monotonic()
        hit = self._cache.get(key_id)
        if hit is not None and hit[0] > now:
            self.hits += 1
            return hit[1]
        self.misses += 1
        async with self.pool.connection() as conn:
            record = await lookup_key(conn, key_id)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key_id] = (now + self.settings.auth_cache_s, record)
        return record

    async def authenticate(self, request: Request) -> Principal:
        parts = split_key(presented_key(request))
        if parts is None:
            raise _unauthorized("malformed API key")
        key_id, secret = parts
        record = await self._record(key_id)
        if record is None or not record.matches(secret):
            raise _unauthorized("unknown API key")
        if record.revoked:
            raise _unauthorized("this API key has been revoked")
        if record.rate_limit_per_s is not None:  # the key's own limit: a burst of one second's worth
            rate, burst = record.rate_limit_per_s, max(1.0, record.rate_limit_per_s)
        else:
            rate, burst = self.settings.rate_limit_per_s, self.settings.rate_limit_burst
        verdict = await self.limiter.take("key", key_id, rate_per_s=rate, burst=burst)
        if not verdict.allowed:
            wait = max(1, math.ceil(verdict.retry_after_s))
            raise ApiError(
                429, "rate_limited", f"rate limit of {rate:g} requests/s exceeded; retry in {wait} s",
                headers={"Retry-After": str(wait)},
            )  # fmt: skip
        return Principal(key_id, record.tenant_id, record.agent_id, frozenset(record.scopes))


def scoped(scope: Scope) -> Callable[[Request], Awaitable[Principal]]:
    """A FastAPI dependency: an authenticated caller holding ``scope``."""

    async def dependency(request: Request) -> Principal:
        principal = await request.app.state.gateway.auth.authenticate(request)
        if scope not in principal.scopes:
            raise ApiError(403, "missing_scope", f"this key lacks the '{scope}' scope")
        request.state.principal = principal
        return principal  # type: ignore[no-any-return]

    dependency.__name__ = f"require_{scope}"
    return dependency
