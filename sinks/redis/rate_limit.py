"""Rate limiting per API key, tenant and client address: a token bucket in Redis, shared by every gateway process.

A key's requests each take a token from the key's bucket and from its tenant's, in one
round trip. A busy key (one asking again within ``BUSY_S`` in the same process) may take a
lease with its token: ``LEASE`` tokens more from both buckets, spent by that process's next
requests of the key without asking Redis, for ``LEASE_S`` at most. A lease is taken only
while every bucket keeps half its burst after it, and it is taken from the buckets before it
is spent: no limit is ever exceeded, and a lease left unspent is tokens the key does not get
back (a share of a burst it was far from using). At 200 searches a second that was the
Redis round trip of eight requests in nine, 0.24 ms of the gateway's CPU each
(docs/benchmarks.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

import redis.asyncio as aioredis

from sinks.redis.keys import rate_limit_key

#: Tokens a lease holds, how long it may be spent, and how soon after the key's last request
#: in the process a request counts as busy (40 a second or more: a lease is mostly spent).
LEASE = 8
LEASE_S = 0.25
BUSY_S = 0.025
#: Key sets remembered per process (their last request and lease): the oldest are dropped.
MAX_TRACKED = 10_000


@dataclass(frozen=True)
class Bucket:
    key: str
    rate_per_s: float
    burst: float


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: float


@dataclass
class _Lease:
    #: When this process last took a token of its buckets (from Redis or from the lease).
    seen: float
    left: int = 0
    until: float = 0.0


class RateLimiter:
    def __init__(
        self,
        client: aioredis.Redis,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: this process's leases' time; ``wall``: the buckets' time, which every
        process sharing them reads alike (the script never sets a bucket's time back)."""
        self.client = client
        self._script = client.register_script(resources.files("sinks.redis").joinpath("rate_limit.lua").read_text())
        self._clock = clock
        self._wall = wall
        #: By buckets, rates and bursts included: a lease holds for the limits it was taken under.
        self._leases: dict[tuple[Bucket, ...], _Lease] = {}
        #: Requests answered from a lease, and requests that asked Redis.
        self.leased = 0
        self.asked = 0

    async def take(self, scope: str, subject: str, *, rate_per_s: float, burst: float) -> Verdict:
        """Take one token from the bucket of ``subject`` (an address: see ``take_all`` for a key).
        Never leased: every request of an address is counted in Redis."""
        refused, wait, _ = await self._take([(rate_limit_key(scope, subject), rate_per_s, burst)])
        return Verdict(refused == 0, wait)

    async def take_all(self, buckets: Sequence[Bucket]) -> tuple[int, Verdict]:
        """Take one token from every bucket or from none, in one round trip (or from this
        process's lease of them); the index of the first bucket without a token (-1 when none)
        and the verdict. The buckets must share a Redis Cluster slot (``principal_bucket_keys``)."""
        limits, now = tuple(buckets), self._clock()
        held = self._leases.get(limits)
        if held is not None and held.left > 0 and now < held.until:
            held.left -= 1
            held.seen = now
            self.leased += 1
            return -1, Verdict(True, 0.0)
        lease = LEASE if held is not None and now - held.seen < BUSY_S else 0
        self.asked += 1
        refused, wait, leased = await self._take([(b.key, b.rate_per_s, b.burst) for b in buckets], lease)
        self._remember(limits, _Lease(now, leased, now + LEASE_S))
        return refused - 1, Verdict(refused == 0, wait)

    def _remember(self, limits: tuple[Bucket, ...], lease: _Lease) -> None:
        held = self._leases.pop(limits, None)
        if held is not None and held.until > lease.seen:
            lease.left += held.left  # a request that asked meanwhile: its tokens are spent too
        self._leases[limits] = lease  # the newest last: the oldest go first
        while len(self._leases) > MAX_TRACKED:
            del self._leases[next(iter(self._leases))]

    async def _take(self, buckets: Sequence[tuple[str, float, float]], lease: int = 0) -> tuple[int, float, int]:
        args: list[str | float] = [f"{self._wall():.6f}"]
        for _, rate, burst in buckets:
            args += [rate, burst]
        args.append(lease)
        refused, wait, leased = await self._script(keys=[key for key, _, _ in buckets], args=args)
        return int(refused), float(wait), int(leased)
