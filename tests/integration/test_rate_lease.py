"""A busy key's lease of tokens (``sinks/redis/rate_limit.py``): taken from the key's and the
tenant's buckets in Redis before any of it is spent, only while both keep half their burst,
spent by the same process's next requests of the key, and never past its time. Two limiters
on one Redis stand for two gateway processes."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from sinks.redis import rate_limit
from sinks.redis.keys import principal_bucket_keys
from sinks.redis.rate_limit import LEASE, LEASE_S, Bucket, RateLimiter
from tests.fixtures.stack import RunningStack


class Clock:
    """A clock the test sets (the limiter's lease clock, or its wall clock)."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def client(stack: RunningStack) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.from_url(stack.settings.require_redis_url())
    try:
        yield client
    finally:
        await client.aclose()


def buckets(*, rate: float = 0.001, burst: float = 100.0, tenant_burst: float = 1_000.0) -> list[Bucket]:
    """A fresh key of a fresh tenant; rates low enough that nothing refills during a test."""
    key, tenant = principal_bucket_keys(f"t-{uuid.uuid4().hex[:8]}", f"k{uuid.uuid4().hex[:8]}")
    return [Bucket(key, rate, burst), Bucket(tenant, rate, tenant_burst)]


async def tokens(client: aioredis.Redis, bucket: Bucket) -> float:
    return float(await client.hget(bucket.key, "tokens") or bucket.burst)


async def test_a_busy_key_spends_a_lease_taken_from_both_buckets_first(client: aioredis.Redis) -> None:
    clock = Clock()
    limiter = RateLimiter(client, clock=clock)
    key, tenant = pair = buckets()
    assert (await limiter.take_all(pair))[0] == -1  # the key's first request: no lease
    assert await tokens(client, key) == pytest.approx(99, abs=0.01)
    clock.now += 0.01  # again within BUSY_S: a lease comes with the token
    assert (await limiter.take_all(pair))[0] == -1
    assert await tokens(client, key) == pytest.approx(99 - 1 - LEASE, abs=0.01)
    assert await tokens(client, tenant) == pytest.approx(1_000 - 2 - LEASE, abs=0.01)
    asked = limiter.asked
    for _ in range(LEASE):  # spent here, Redis untouched
        clock.now += 0.01
        refused, verdict = await limiter.take_all(pair)
        assert refused == -1 and verdict.allowed
    assert limiter.asked == asked and limiter.leased == LEASE
    assert await tokens(client, key) == pytest.approx(99 - 1 - LEASE, abs=0.01)
    clock.now += 0.01
    await limiter.take_all(pair)  # the lease is spent: the next request asks (and leases again)
    assert limiter.asked == asked + 1
    assert await tokens(client, key) == pytest.approx(99 - 2 - 2 * LEASE, abs=0.01)


async def test_a_key_asking_seldom_never_leases(client: aioredis.Redis) -> None:
    clock = Clock()
    limiter = RateLimiter(client, clock=clock)
    key, _ = pair = buckets()
    for _ in range(5):
        clock.now += rate_limit.BUSY_S * 2
        assert (await limiter.take_all(pair))[0] == -1
    assert limiter.asked == 5 and limiter.leased == 0
    assert await tokens(client, key) == pytest.approx(95, abs=0.01)


@pytest.mark.parametrize("small", ["key", "tenant"])
async def test_no_lease_that_would_leave_either_bucket_under_half_its_burst(client: aioredis.Redis, small: str) -> None:
    """A key of 10 a second (or a tenant of 10) is counted request by request, and refused at
    exactly its burst."""
    clock = Clock()
    limiter = RateLimiter(client, clock=clock)
    pair = buckets(burst=10) if small == "key" else buckets(tenant_burst=10)
    verdicts = []
    for _ in range(12):
        clock.now += 0.001
        verdicts.append((await limiter.take_all(pair))[0])
    assert limiter.leased == 0
    assert verdicts == [-1] * 10 + [0 if small == "key" else 1] * 2


async def test_two_processes_never_admit_more_than_the_buckets_hold(client: aioredis.Redis) -> None:
    """Both busy, leasing while the key's bucket holds enough: together they admit its burst
    exactly, the leases spent before either asks again."""
    clock = Clock()
    first, second = RateLimiter(client, clock=clock), RateLimiter(client, clock=clock)
    key, _ = pair = buckets(burst=100)
    admitted = 0
    for i in range(300):
        clock.now += 0.001
        refused, _ = await (first if i % 3 else second).take_all(pair)
        admitted += refused == -1
    assert first.leased + second.leased > 0
    assert admitted == 100
    assert await tokens(client, key) == pytest.approx(0, abs=0.5)


async def test_a_lease_is_not_spent_past_its_time_nor_for_changed_limits(client: aioredis.Redis) -> None:
    clock = Clock()
    limiter = RateLimiter(client, clock=clock)
    key, tenant = pair = buckets()
    await limiter.take_all(pair)
    clock.now += 0.01
    await limiter.take_all(pair)  # leased
    clock.now += LEASE_S + 0.01
    asked = limiter.asked
    await limiter.take_all(pair)
    assert limiter.asked == asked + 1, "an expired lease asks Redis"
    clock.now += 0.01
    await limiter.take_all(pair)  # busy again: a fresh lease
    asked = limiter.asked
    changed = [Bucket(key.key, key.rate_per_s * 2, key.burst), tenant]  # the key's limit was raised
    clock.now += 0.01
    await limiter.take_all(changed)
    assert limiter.asked == asked + 1, "a lease holds for the limits it was taken under only"


async def test_an_address_is_never_leased(client: aioredis.Redis) -> None:
    clock = Clock()
    limiter = RateLimiter(client, clock=clock)
    subject = f"10.0.0.{uuid.uuid4().int % 250}-{uuid.uuid4().hex[:6]}"
    for _ in range(5):
        clock.now += 0.001
        assert (await limiter.take("addr", subject, rate_per_s=0.001, burst=100)).allowed
    assert limiter.leased == 0


async def test_requests_counted_out_of_order_are_not_refilled_twice(client: aioredis.Redis) -> None:
    """Two gateway processes (or two tasks of one) read the time, then reach Redis in either
    order. A late request used to set its bucket's time back, and the next one was refilled for
    that stretch again: a red team's load through two gateway processes got 15 % over the rate. Whatever
    the order, what is admitted stays within the burst and the rate over the time spanned."""
    rng = random.Random(20261206)
    wall = Clock()
    limiter = RateLimiter(client, wall=wall)
    rate, burst = 10.0, 10.0
    key, tenant = buckets(rate=rate, burst=burst)
    pair = [key, Bucket(tenant.key, 1e6, 1e6)]
    admitted, start = 0, 1_000.0
    for step in range(600):
        base = start + step * 0.005  # 200 requests a second, each read up to 30 ms early
        wall.now = base - rng.uniform(0.0, 0.03)
        admitted += (await limiter.take_all(pair))[0] == -1
    span = (start + 599 * 0.005) - (start - 0.03)
    assert admitted <= burst + rate * span + 1, (admitted, burst + rate * span)
    assert admitted >= rate * span - burst, "the bucket still refills"
