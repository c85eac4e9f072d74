"""Row-level security context: which tenant (and agent) a transaction acts for.

Every tenant-owned table's policies read ``app.tenant_id`` (and ``app.agent_id``);
they are set with ``set_config(..., true)``, i.e. for the current transaction only, so
a pooled connection never carries one tenant's setting into another's request.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

_SET = (
    "SELECT set_config('app.tenant_id', %s, true), set_config('app.agent_id', %s, true),"
    " set_config('app.actor', %s, true)"
)


async def act_as(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, *, agent_id: str | None = None, actor: str = ""
) -> None:
    """Switch the current transaction to ``tenant_id`` (and ``agent_id``, if the caller is
    bound to one). Must be called inside a transaction."""
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        raise RuntimeError("act_as() outside a transaction would leak the tenant into the pool")
    await conn.execute(_SET, (tenant_id, agent_id or "", actor))


@asynccontextmanager
async def tenant_transaction(
    pool: AsyncConnectionPool,
    tenant_id: str,
    *,
    agent_id: str | None = None,
    actor: str = "",
    pipeline: bool = False,
) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A pooled connection in a transaction acting for one tenant.

    ``pipeline``: the whole transaction in pipeline mode, so a statement is sent without
    waiting for the one before and a round trip happens only when a result is read: BEGIN
    and the tenant's settings travel with the first query (two round trips fewer, for a
    read path that makes four or five). An error then surfaces when a result is read or at
    the end, not at the statement that caused it: for reads."""
    async with pool.connection() as conn, AsyncExitStack() as stack:
        if pipeline:
            await stack.enter_async_context(conn.pipeline())
        await stack.enter_async_context(conn.transaction())
        await act_as(conn, tenant_id, agent_id=agent_id, actor=actor)
        yield conn


#: ``idle_tenant_transaction`` lends a connection only while fewer than this many are in use:
#: about one busy Postgres backend per core of this machine.
SPARE_WHILE_BUSY_BELOW = max(2, os.cpu_count() or 1)

#: How long ``idle_tenant_transaction`` waits when the pool said it had one idle (another
#: request may take it first).
IDLE_WAIT_S = 0.002


@asynccontextmanager
async def idle_tenant_transaction(
    pool: AsyncConnectionPool,
    tenant_id: str,
    *,
    agent_id: str | None = None,
    actor: str = "",
    pipeline: bool = False,
) -> AsyncIterator[psycopg.AsyncConnection[Any] | None]:
    """``tenant_transaction`` on a connection the pool has idle now, else None: it never
    queues. A request already holding a connection may use a second for work it can run
    beside the first, but waiting for one could deadlock requests that each hold one.
    ``pipeline`` as for ``tenant_transaction``.

    Also None while ``SPARE_WHILE_BUSY_BELOW`` or more of the pool's connections are in use
    (the caller's own among them): work beside the first only gains while Postgres has a core
    to spare, and under load a second connection is a second transaction's cost for nothing."""
    stats = pool.get_stats()
    available = stats.get("pool_available", 0)
    if available < 1 or stats.get("pool_size", 0) - available >= SPARE_WHILE_BUSY_BELOW:
        yield None
        return
    try:
        conn = await pool.getconn(timeout=IDLE_WAIT_S)
    except PoolTimeout:
        yield None
        return
    try:
        async with AsyncExitStack() as stack:
            if pipeline:
                await stack.enter_async_context(conn.pipeline())
            await stack.enter_async_context(conn.transaction())
            await act_as(conn, tenant_id, agent_id=agent_id, actor=actor)
            yield conn
    finally:
        await pool.putconn(conn)
