"""Who is calling: API keys (tenant, optional agent, scopes), checked on every request
(before its body is read: agents_gateway/limits.py), with rate limits per key, per tenant,
and per client address for callers without a valid key. The tenant always comes from the
key, never from the body."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from psycopg_pool import AsyncConnectionPool
from starlette.requests import HTTPConnection

from agents_gateway.errors import ApiError
from agents_gateway.state import gateway_state
from memstream.settings import Settings
from schemas.turns import control_problem
from sinks.postgres.api_keys import KeyRecord, lookup_key
from sinks.redis.keys import principal_bucket_keys
from sinks.redis.rate_limit import Bucket, RateLimiter

Scope = str
#: Lets a key publish turns with role ``system`` (they speak for the operator, not the user).
SYSTEM_SCOPE = "system"
#: Where the RequestGuard (agents_gateway/limits.py) leaves the principal it authenticated.
PRINCIPAL_SCOPE_KEY = "memstream.principal"
#: Set in the ASGI scope of the gateway's calls to itself (``agents_gateway/mcp.py``): the outer
#: request was authenticated and rate-limited already, so the inner one is not charged again.
#: Only the in-process transport sets it; nothing a client sends can.
INTERNAL_SCOPE_KEY = "memstream.internal"


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


def presented_key(request: HTTPConnection) -> str:
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


#: ``msk_<key id: 16 hex digits>_<secret: URL-safe base64>``: anything else is refused before
#: it reaches the cache or Postgres.
KEY_FORMAT = re.compile(r"msk_([0-9a-f]{16})_([A-Za-z0-9_-]{20,128})")


def client_address(request: HTTPConnection) -> str:
    """The address the per-address limit counts: the peer's IP (what uvicorn's proxy-headers
    handling made of it), an IPv6 peer by its /64 (one host usually holds a whole /64)."""
    host = request.client.host if request.client is not None else ""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host or "unknown"
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _too_many(code: str, message: str, retry_after_s: float) -> ApiError:
    wait = max(1, math.ceil(retry_after_s))
    return ApiError(429, code, f"{message}; retry in {wait} s", headers={"Retry-After": str(wait)})


class Authenticator:
    """Resolves keys and applies the rate limits: the key's, then its tenant's (all its keys
    together). A caller without a valid key (none, malformed, unknown, wrong secret, revoked)
    spends a token of its address's bucket, and so does every key lookup that has to go to
    Postgres for a key id the cache does not hold as valid: an address that keeps failing
    gets 429 before it reaches Postgres.

    Keys that exist are cached (LRU of ``auth_cache_max_keys``) apart from key ids that do not
    (LRU of ``auth_negative_cache_size``), so a flood of unknown ids never evicts a valid key.
    Entries are fresh for ``auth_cache_s``: a revocation takes effect within that."""

    def __init__(self, pool: AsyncConnectionPool, limiter: RateLimiter, settings: Settings) -> None:
        self.pool = pool
        self.limiter = limiter
        self.settings = settings
        self._known: OrderedDict[str, tuple[float, KeyRecord]] = OrderedDict()
        self._unknown: OrderedDict[str, float] = OrderedDict()
        #: One Postgres lookup per key id at a time; concurrent requests wait for it.
        self._lookups: dict[str, asyncio.Future[KeyRecord | None]] = {}
        #: Key lookups answered from the cache, and lookups that read Postgres (the cache-hit metric).
        self.hits = 0
        self.misses = 0

    async def charge_address(self, request: HTTPConnection) -> None:
        """Spend a token of the caller's address; 429 when it has none left. Every refused
        credential pays it: an API key here, the ops token in ``RequestGuard``."""
        rate, burst = self.settings.addr_rate_limit_per_s, self.settings.addr_rate_limit_burst
        verdict = await self.limiter.take("addr", client_address(request), rate_per_s=rate, burst=burst)
        if not verdict.allowed:
            raise _too_many(
                "address_rate_limited",
                f"too many requests without a valid API key from this address (limit {rate:g}/s)",
                verdict.retry_after_s,
            )

    async def _lookup(self, key_id: str) -> KeyRecord | None:
        self.misses += 1
        async with self.pool.connection() as conn:
            record = await lookup_key(conn, key_id)
        until = time.monotonic() + self.settings.auth_cache_s
        if record is None:
            self._known.pop(key_id, None)
            self._unknown[key_id] = until
            self._unknown.move_to_end(key_id)
            while len(self._unknown) > self.settings.auth_negative_cache_size:
                self._unknown.popitem(last=False)
        else:
            self._unknown.pop(key_id, None)
            self._known[key_id] = (until, record)
            self._known.move_to_end(key_id)
            while len(self._known) > self.settings.auth_cache_max_keys:
                self._known.popitem(last=False)
        return record

    async def _shared_lookup(
        self, key_id: str, pay: Callable[[], Awaitable[None]] | None = None
    ) -> tuple[KeyRecord | None, bool]:
        """The key's record, looked up once for every request that asks while a lookup is in
        flight; ``pay`` (the address's token) is spent first by the request that starts one.
        Also whether this request paid. A request that joined a lookup whose starter could not
        pay (its address was out of tokens) starts one of its own."""
        pending = self._lookups.get(key_id)
        if pending is not None:
            try:
                return await asyncio.shield(pending), False
            except ApiError:
                pass  # another address's refusal is not this request's
        paid = pay is not None

        async def lookup() -> KeyRecord | None:
            if pay is not None:
                await pay()
            return await self._lookup(key_id)

        pending = asyncio.ensure_future(lookup())  # registered before any await: joiners find it
        self._lookups[key_id] = pending

        def forget(done: asyncio.Future[KeyRecord | None]) -> None:
            if self._lookups.get(key_id) is done:
                del self._lookups[key_id]
            if not done.cancelled():
                done.exception()  # its waiters get it; none left (disconnected) is no error

        pending.add_done_callback(forget)
        return await asyncio.shield(pending), paid

    async def authenticate(self, request: HTTPConnection) -> Principal:
        charged = False

        async def refuse(error: ApiError) -> ApiError:
            if not charged:
                await self.charge_address(request)  # 429 instead, once the address's bucket is empty
            return error

        try:
            presented = presented_key(request)
        except ApiError as exc:
            raise await refuse(exc) from None
        parts = KEY_FORMAT.fullmatch(presented)
        if parts is None:
            raise await refuse(_unauthorized("malformed API key"))
        key_id, secret = parts.groups()
        now = time.monotonic()
        known = self._known.get(key_id)
        record: KeyRecord | None
        if known is not None and known[0] > now:
            self.hits += 1
            self._known.move_to_end(key_id)
            record = known[1]
        elif known is None and self._unknown.get(key_id, 0.0) > now:
            self.hits += 1
            record = None
        else:
            # A refresh of a key this caller proved it holds is free; any other lookup is charged,
            # once: requests arriving while that lookup is in flight wait for it uncharged (a
            # burst of a new valid key is one lookup, not one address token per request), and
            # are charged by ``refuse`` if the key turns out not to be valid.
            proved = known is not None and known[1].matches(secret)
            record, charged = await self._shared_lookup(
                key_id, None if proved else lambda: self.charge_address(request)
            )
        if record is None or not record.matches(secret):
            raise await refuse(_unauthorized("unknown API key"))
        if record.revoked:
            raise await refuse(_unauthorized("this API key has been revoked"))
        principal = Principal(key_id, record.tenant_id, record.agent_id, frozenset(record.scopes))
        if request.scope.get(INTERNAL_SCOPE_KEY):  # the gateway calling itself for a caller it has charged
            return principal
        if record.rate_limit_per_s is not None:  # the key's own limit: a burst of one second's worth
            rate, burst = record.rate_limit_per_s, max(1.0, record.rate_limit_per_s)
        else:
            rate, burst = self.settings.rate_limit_per_s, self.settings.rate_limit_burst
        tenant_rate, tenant_burst = self.settings.tenant_rate(record.tenant_id)
        key_bucket, tenant_bucket = principal_bucket_keys(record.tenant_id, key_id)
        refused, verdict = await self.limiter.take_all(
            [Bucket(key_bucket, rate, burst), Bucket(tenant_bucket, tenant_rate, tenant_burst)]
        )
        if refused == 0:
            raise _too_many("rate_limited", f"rate limit of {rate:g} requests/s exceeded", verdict.retry_after_s)
        if refused == 1:
            raise _too_many(
                "tenant_rate_limited",
                f"the tenant's rate limit of {tenant_rate:g} requests/s (all its keys together) exceeded",
                verdict.retry_after_s,
            )
        return principal

    async def verify(self, presented: str) -> Principal | None:
        """The holder of a key the request guard has already authenticated (and charged), or
        None: a check without rate limits, for a mounted app that sees the key again (``/mcp``)."""
        parts = KEY_FORMAT.fullmatch(presented)
        if parts is None:
            return None
        key_id, secret = parts.groups()
        known = self._known.get(key_id)
        if known is not None and known[0] > time.monotonic():
            record: KeyRecord | None = known[1]
        else:
            record, _ = await self._shared_lookup(key_id)
        if record is None or record.revoked or not record.matches(secret):
            return None
        return Principal(key_id, record.tenant_id, record.agent_id, frozenset(record.scopes))


def check_parameters(request: Request, principal: Principal) -> None:
    """What every authenticated request must obey, whatever its route declares: no control
    characters in the path or the query (422 naming the parameter), and a ``tenant_id`` or
    ``agent_id`` in the query must be the key's own (403), even where a route ignores them."""
    for name, value in (*request.path_params.items(), *request.query_params.multi_items()):
        if isinstance(value, str) and (problem := control_problem(name, value)):
            raise ApiError(
                422, "invalid_request", problem,
                details=[{"loc": ["query", name], "msg": problem, "type": "control_character"}],
            )  # fmt: skip
    for claimed in request.query_params.getlist("tenant_id"):
        principal.check_tenant(claimed)
    for claimed in request.query_params.getlist("agent_id"):
        principal.check_agent(claimed)


async def _caller(request: Request) -> Principal:
    """The request's principal: authenticated by the RequestGuard before the body was read
    (agents_gateway/limits.py), else here."""
    principal: Principal | None = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if principal is None:
        principal = await gateway_state(request).auth.authenticate(request)
    return principal


async def authenticated(request: Request) -> Principal:
    """A FastAPI dependency: any caller with a valid key, whatever its scopes (``/v1/whoami``).
    The parameters are checked as for every other route (``check_parameters``)."""
    principal = await _caller(request)
    check_parameters(request, principal)
    request.state.principal = principal
    return principal


def scoped(
    scope: Scope, *, tenant_wide: bool = False, agent_scope: Scope | None = None
) -> Callable[[Request], Awaitable[Principal]]:
    """A FastAPI dependency: an authenticated caller holding ``scope``. ``tenant_wide``
    operations (erasing a user, the tenant's policies and rules, allow-once grants) also need
    a key that is not bound to an agent: an agent's key acts for that agent only. With
    ``agent_scope``, a key bound to an agent may hold that scope instead, for an operation on its
    own agent's memory only (forgetting one of its memories takes ``ingest``, where a
    tenant-level key needs ``admin``)."""

    async def dependency(request: Request) -> Principal:
        principal = await _caller(request)
        as_agent = agent_scope is not None and principal.agent_id is not None
        if scope not in principal.scopes and not (as_agent and agent_scope in principal.scopes):
            wanted = f"'{agent_scope}' (or '{scope}')" if as_agent else f"'{scope}'"
            raise ApiError(403, "missing_scope", f"this key lacks the {wanted} scope")
        if tenant_wide and principal.agent_id is not None:
            raise ApiError(
                403, "tenant_key_required",
                f"this changes the whole tenant: use a key that is not bound to an agent (this one acts for "
                f"agent {principal.agent_id})",
            )  # fmt: skip
        check_parameters(request, principal)
        request.state.principal = principal
        return principal

    suffix = ("_tenant_wide" if tenant_wide else "") + (f"_or_agent_{agent_scope}" if agent_scope else "")
    dependency.__name__ = f"require_{scope}{suffix}"
    return dependency
