"""Row-level security context: which tenant (and agent) a transaction acts for.

Every tenant-owned table's policies read ``app.tenant_id`` (and ``app.agent_id``);
they are set with ``set_config(..., true)``, i.e. for the current transaction only, so
a pooled connection never carries one tenant's setting into another's request.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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

    ``pipeline``: for reads (``read_transaction``). The whole transaction in pipeline mode, so
    a statement is sent without waiting for the one before and a round trip happens only when
    a result is read: the tenant's settings travel with the first query. An error surfaces
    when a result is read or at the end, not at the statement that caused it."""
    async with pool.connection() as conn, _acting(conn, tenant_id, agent_id, actor, pipeline=pipeline):
        yield conn


@asynccontextmanager
async def _acting(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, agent_id: str | None, actor: str, *, pipeline: bool
) -> AsyncIterator[None]:
    """``conn`` in a transaction for the tenant: a read's (``read_transaction``) or an explicit one."""
    if pipeline:
        async with read_transaction(conn, tenant_id, agent_id=agent_id, actor=actor):
            yield
    else:
        async with conn.transaction():
            await act_as(conn, tenant_id, agent_id=agent_id, actor=actor)
            yield


@asynccontextmanager
async def read_transaction(
    conn: psycopg.AsyncConnection[Any], tenant_id: str, *, agent_id: str | None = None, actor: str = ""
) -> AsyncIterator[None]:
    """``conn`` in pipeline mode, reading for one tenant in the pipeline's implicit transaction.

    Without BEGIN, Postgres runs everything sent before a Sync as one transaction, committed
    (or, after an error, rolled back) at the Sync. psycopg sends one when the pipeline ends and
    reads results meanwhile with a flush (``candidate_lists_many`` reads its lists so on a
    connection in pipeline mode), so the tenant's settings, made for the transaction
    (``set_config(..., true)``), hold for every statement of the read and end with it: a pooled
    connection never carries them into another request. BEGIN and COMMIT were two statements of
    a search's nine (docs/benchmarks.md, "The read as the pipeline's implicit transaction").

    Reads only, and nothing in the block may end the pipeline early (``conn.pipeline()`` nested
    in it ends with a Sync): a statement after that would see no tenant, and row-level security
    would show it nothing."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or conn.pgconn.pipeline_status:
        raise RuntimeError("read_transaction() needs an idle connection, in no transaction and no pipeline")
    await conn.set_autocommit(True)  # no BEGIN of psycopg's own: the transaction is the pipeline's
    try:
        async with conn.pipeline():
            await conn.execute(_SET, (tenant_id, agent_id or "", actor))
            yield
    finally:
        await _restore(conn)


async def _restore(conn: psycopg.AsyncConnection[Any]) -> None:
    """``conn`` as the pool lends it (not in autocommit), or closed where it cannot be: a broken
    connection, or one left in a transaction, is closed, and the pool drops it."""
    if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        await conn.set_autocommit(False)
    else:
        await conn.close()


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
        async with _acting(conn, tenant_id, agent_id, actor, pipeline=pipeline):
            yield conn
    finally:
        await pool.putconn(conn)
