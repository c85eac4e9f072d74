"""Rate limiting per API key, tenant and client address: a token bucket in Redis, shared by every gateway process."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources

import redis.asyncio as aioredis

from sinks.redis.keys import rate_limit_key


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: float


class RateLimiter:
    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client
        self._script = client.register_script(resources.files("sinks.redis").joinpath("rate_limit.lua").read_text())

    async def take(self, scope: str, subject: str, *, rate_per_s: float, burst: float) -> Verdict:
        """Take one token from the bucket of ``subject`` (an API key id, a tenant, an address)."""
        bucket = rate_limit_key(scope, subject)
        allowed, wait = await self._script(keys=[bucket], args=[rate_per_s, burst, f"{time.time():.6f}"])
        return Verdict(bool(int(allowed)), float(wait))
