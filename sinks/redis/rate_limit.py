"""Rate limiting per API key, tenant and client address: a token bucket in Redis, shared by every gateway process."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import redis.asyncio as aioredis

from sinks.redis.keys import rate_limit_key


@dataclass(frozen=True)
class Bucket:
    key: str
    rate_per_s: float
    burst: float


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: float


class RateLimiter:
    def __init__(self, client: aioredis.Redis) -> None:
        self.client = client
        self._script = client.register_script(resources.files("sinks.redis").joinpath("rate_limit.lua").read_text())

    async def take(self, scope: str, subject: str, *, rate_per_s: float, burst: float) -> Verdict:
        """Take one token from the bucket of ``subject`` (an address: see ``take_all`` for a key)."""
        refused, wait = await self._take([(rate_limit_key(scope, subject), rate_per_s, burst)])
        return Verdict(refused == 0, wait)

    async def take_all(self, buckets: Sequence[Bucket]) -> tuple[int, Verdict]:
        """Take one token from every bucket or from none, in one round trip; the index of the
        first bucket without a token (-1 when none) and the verdict. The buckets must share a
        Redis Cluster slot (``principal_bucket_keys``)."""
        refused, wait = await self._take([(b.key, b.rate_per_s, b.burst) for b in buckets])
        return refused - 1, Verdict(refused == 0, wait)

    async def _take(self, buckets: Sequence[tuple[str, float, float]]) -> tuple[int, float]:
        args: list[str | float] = [f"{time.time():.6f}"]
        for _, rate, burst in buckets:
            args += [rate, burst]
        refused, wait = await self._script(keys=[key for key, _, _ in buckets], args=args)
        return int(refused), float(wait)
