"""A gateway's Postgres connections primed before its first requests: each runs the read
path's statements once, as a tenant no API key can name, so that the requests that follow
find a backend that has its catalog caches built and every statement prepared.

A backend's first use of a statement costs several times its later ones: the tables', indexes'
and functions' cache entries are built, the statement is parsed, analysed and expanded for
row-level security, and psycopg prepares it (docs/benchmarks.md, "A fresh pool": the first
search on a new connection 2-4 times the later ones, per statement). A gateway that opens its
connections as load arrives pays that inside the first requests of every new connection; one
that primes them at start pays it once, before anyone waits.

The tenant is ``WARM_TENANT``: no tenant id may start with "~" (``schemas.turns.TENANT_ID``,
which keys and events are held to), so no key can act for it and row-level security shows it
nothing. Nothing is written: the transaction is read-only (and committed, not rolled back:
psycopg forgets a connection's prepared statements on a ROLLBACK).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from sinks.postgres.queries.facts import facts_as_of
from sinks.postgres.queries.retrieval import (
    EPISODE_TYPES,
    MEMORY_TYPES,
    Filters,
    Probe,
    Terms,
    VectorScan,
    candidate_lists_many,
    read_owner_totals,
    read_terms,
    send_owner_totals,
    send_terms,
)
from sinks.postgres.tenancy import act_as

log = logging.getLogger(__name__)

#: Starts with "~", which no tenant id may (``schemas.turns.TENANT_ID``), nor a user id.
WARM_TENANT = "~memstream-warm-up"
WARM_USER = "~warm-up"

#: The read path's shapes of filter: a search's (every kind) and a context's (episodes and
#: skills), with a project and without (the same statements: the project is a parameter).
_FILTERS = (
    Filters(WARM_TENANT, WARM_USER, memory_types=MEMORY_TYPES),
    Filters(WARM_TENANT, WARM_USER, project_id=WARM_USER, session_id=WARM_USER,
            memory_types=(*EPISODE_TYPES, "skill")),
)  # fmt: skip

#: Made-up document frequencies for the text query, so that it is sent (it is planned anew on
#: every call, ``_PLAN_TEXT``; priming it builds the text functions' cache entries).
_TERMS = Terms({"memstream": 1, "warm": 2}, n_docs=1_000, owner_tag="~", in_project=1_000)


#: The vector lists primed: both, unless the deployment never uses HNSW (``vector_index=exact``).
SCANS: tuple[VectorScan, ...] = ("exact", "hnsw")

_READ_ONLY = "SET TRANSACTION READ ONLY"
#: An HNSW scan with iterative scans walks the whole index for a user with no rows (800 ms at
#: 100,000 episodes): priming bounds it to the first tuple, and any statement to a few seconds.
_BOUNDED = "SELECT set_config('hnsw.max_scan_tuples', '1', true), set_config('statement_timeout', %(timeout)s, true)"
#: A statement of priming that takes longer than this is cancelled (the connection serves unprimed).
STATEMENT_TIMEOUT_MS = 5_000


async def prime(
    conn: psycopg.AsyncConnection[Any], *, model: str, dim: int, text_config: str, scans: tuple[VectorScan, ...] = SCANS
) -> None:
    """Run the read path's statements once on ``conn`` (not in a transaction), as
    ``WARM_TENANT``, in a read-only transaction: the totals, the query's terms, the facts of
    a context, and each filter's candidate lists by each of ``scans``."""
    probe = Probe(np.zeros(dim, dtype=np.float32), "warm up", _TERMS)
    async with conn.transaction():  # committed: psycopg forgets every prepared statement on a ROLLBACK
        await conn.execute(_READ_ONLY)
        await conn.execute(_BOUNDED, {"timeout": str(STATEMENT_TIMEOUT_MS)})
        await act_as(conn, WARM_TENANT)
        for filters in _FILTERS:
            await read_owner_totals(await send_owner_totals(conn, filters))
            await read_terms(await send_terms(conn, filters, "warm up", config=text_config))
            for scan in scans:
                await candidate_lists_many(conn, filters, [probe], model=model, limit=50, scan=scan,
                                           config=text_config)  # fmt: skip
        await facts_as_of(conn, user_id=WARM_USER, project_id=WARM_USER, session_id=WARM_USER)


async def prime_pool(
    pool: AsyncConnectionPool,
    count: int,
    *,
    model: str,
    dim: int,
    text_config: str,
    timeout_s: float,
    scans: tuple[VectorScan, ...] = SCANS,
) -> int:
    """Prime ``count`` of the pool's connections (``prime``), each a different one: all are
    held until every one is primed. Returns how many were; one that fails is logged and put
    back (the pool checks it), and connections the pool cannot give within ``timeout_s``
    (Postgres down) are not primed: the gateway serves anyway, on connections opened as
    requests need them."""
    held: list[psycopg.AsyncConnection[Any]] = []
    try:
        try:
            for _ in range(count):
                held.append(await pool.getconn(timeout=timeout_s))
        except PoolTimeout:
            log.warning("priming the gateway's connections: got %d of %d in %.0f s", len(held), count, timeout_s)
        primer = functools.partial(prime, model=model, dim=dim, text_config=text_config, scans=scans)
        done = await asyncio.gather(*(_prime_one(primer, conn) for conn in held))
    finally:
        for conn in held:
            await pool.putconn(conn)
    return sum(done)


async def _prime_one(
    primer: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]], conn: psycopg.AsyncConnection[Any]
) -> bool:
    try:
        await primer(conn)
    except psycopg.Error as exc:
        log.warning("could not prime a gateway connection (it serves unprimed): %s", exc)
        return False
    return True
