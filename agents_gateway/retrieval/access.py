"""Access statistics without slowing reads: reads note what they returned, and a background
task writes the counts in batches (per tenant, under RLS) every ``interval_s``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable

import psycopg
import psycopg_pool
from psycopg_pool import AsyncConnectionPool

from sinks.postgres.access import record_access
from sinks.postgres.tenancy import tenant_transaction

log = logging.getLogger(__name__)


class AccessRecorder:
    def __init__(self, pool: AsyncConnectionPool, *, interval_s: float = 2.0) -> None:
        self.pool = pool
        self.interval_s = interval_s
        self._pending: dict[str, tuple[set[uuid.UUID], set[uuid.UUID]]] = defaultdict(lambda: (set(), set()))
        self._task: asyncio.Task[None] | None = None

    def note(self, tenant_id: str, *, episodes: Iterable[uuid.UUID] = (), facts: Iterable[uuid.UUID] = ()) -> None:
        pending = self._pending[tenant_id]
        pending[0].update(episodes)
        pending[1].update(facts)

    async def flush(self) -> None:
        batch, self._pending = self._pending, defaultdict(lambda: (set(), set()))
        for tenant, (episodes, facts) in batch.items():
            try:
                async with tenant_transaction(self.pool, tenant, actor="reads") as conn:
                    await record_access(conn, episodes=sorted(episodes), facts=sorted(facts))
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                # Statistics, not memory: the next reads will count again.
                log.warning("access statistics of %s not written: %s", tenant, exc)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.flush()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="access-statistics")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.flush()
