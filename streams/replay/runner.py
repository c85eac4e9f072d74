"""`memstream replay`: a run from start (or its last checkpoint) to the switch.

1. Find the unfinished run of the same scope and target (resume from its checkpoints) or
   start one; a rebuild into fresh tables creates its shadow schema.
2. Per tenant, read the scope's events in log order, ``batch_size`` at a time, through the
   pipeline; after each batch, save the checkpoint (the log position done).
3. Fresh tables: catch up with events logged meanwhile, then switch (``sinks/postgres/
   switch.py``) in one transaction that also marks the run switched, retrying while the
   live tables are busy or hold rows from events the log does not have yet. ``verify``
   compares digests instead and drops the rebuild.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg

from memstream.settings import Settings
from sinks.postgres.audit import append_audit
from sinks.postgres.migrate import check_schema
from sinks.postgres.queries.replay_log import count_events, log_end, read_events
from sinks.postgres.replay_runs import (
    Checkpoint,
    ReplayRun,
    checkpoints,
    create_run,
    finish_run,
    note_run,
    save_checkpoint,
    try_lock_run,
    unfinished_run,
    unlock_run,
)
from sinks.postgres.shadow import SHADOW_PREFIX, create_shadow, drop_shadow, live_schema
from sinks.postgres.switch import SwitchScope, carry_over, lock_live, orphans, replace_rows
from sinks.postgres.tenancy import act_as, tenant_transaction
from streams.replay.digests import Digest, differences, digest
from streams.replay.pipeline import ReplayPipeline
from streams.replay.progress import Progress
from streams.replay.resources import ReplayResources
from streams.replay.scope import ReplayError, Scope, Target

log = logging.getLogger(__name__)

#: Exit status of a simulated crash (``fail_after_batches``, for tests).
CRASH_EXIT = 75
CATCH_UP_ROUNDS = 5
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class ReplayOptions:
    scope: Scope = field(default_factory=Scope)
    target: Target = "shadow"
    batch_size: int = 500
    re_extract: bool = False
    buffers: bool = False
    restart: bool = False
    switch_timeout_s: float = 60.0
    #: Die (``os._exit``) after this many batches: a crash, for tests of resuming.
    fail_after_batches: int | None = None


@dataclass
class ReplayReport:
    run_id: str
    target: str
    scope: dict[str, Any]
    resumed: bool
    status: str = "running"
    events: int = 0
    replay_s: float = 0.0
    events_per_s: float = 0.0
    switch_s: float | None = None
    rejected: list[dict[str, Any]] = field(default_factory=list)
    switched: dict[str, Any] = field(default_factory=dict)
    digest: Digest = field(default_factory=dict)
    live_digest: Digest | None = None
    matches: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Orphans(Exception):
    """Live rows derive from events the log does not have yet: switch later."""


async def run_replay(settings: Settings, options: ReplayOptions) -> ReplayReport:
    options.scope.check(options.target)
    owner_url = settings.require_owner_database_url()
    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as admin:
        await check_schema(admin)
        live = await live_schema(admin)
        if not _SCHEMA_NAME.fullmatch(live):
            raise ReplayError(f"the projections are in schema {live!r}: a replay needs a plain lowercase schema name")
        run, resumed = await _open_run(admin, options, live)
        try:
            return await _Replay(settings, options, admin, live, run, resumed).run()
        finally:
            await unlock_run(admin, run.run_id)


async def _open_run(admin: psycopg.AsyncConnection[Any], options: ReplayOptions, live: str) -> tuple[ReplayRun, bool]:
    scope, target = options.scope, options.target
    existing = await unfinished_run(admin, scope.key, target)
    if existing is not None:
        if not await try_lock_run(admin, existing.run_id):
            raise ReplayError(f"replay {existing.run_id} of this scope is running in another process")
        if not options.restart:
            log.info("resuming replay %s", existing.run_id)
            return existing, True
        if existing.shadow_schema:
            await drop_shadow(admin, existing.shadow_schema)
        await finish_run(admin, existing.run_id, "abandoned", {"reason": "restarted"})
        await unlock_run(admin, existing.run_id)
    run_id = uuid.uuid4()
    shadow = f"{SHADOW_PREFIX}{run_id.hex[:12]}" if target != "in-place" else None
    run = ReplayRun(run_id, scope.key, scope.describe(), target, shadow, options.batch_size, options.re_extract)
    async with admin.transaction():
        await create_run(admin, run)
        if shadow:
            await create_shadow(admin, shadow, live)
    if not await try_lock_run(admin, run_id):  # pragma: no cover - a fresh id
        raise ReplayError(f"replay {run_id} is locked by another process")
    return run, False


class _Replay:
    def __init__(self, settings: Settings, options: ReplayOptions, admin: psycopg.AsyncConnection[Any], live: str,
                 run: ReplayRun, resumed: bool) -> None:  # fmt: skip
        self.settings = settings
        self.options = options
        self.admin = admin
        self.live = live
        self.run_ = run
        self.filter = options.scope.log_filter
        self.report = ReplayReport(str(run.run_id), run.target, run.scope, resumed)
        self.marks: dict[str, Checkpoint] = {}
        #: Per tenant, the log position the replay has read up to.
        self.read_to: dict[str, int] = {}
        self.batches = 0
        search_path = f"{run.shadow_schema},{live}" if run.shadow_schema else None
        self.resources = ReplayResources(
            settings, database_url=settings.require_owner_database_url(), search_path=search_path
        )
        self.progress = Progress(0)

    async def run(self) -> ReplayReport:
        if self.options.batch_size != self.run_.batch_size or self.options.re_extract != self.run_.re_extract:
            log.warning(
                "resuming with the run's own batch size (%d) and re-extraction (%s), for a deterministic result",
                self.run_.batch_size, self.run_.re_extract,
            )  # fmt: skip
        tenants = await self._tenants()
        await self.resources.on_start()
        try:
            pipeline = ReplayPipeline(self.resources, re_extract=self.run_.re_extract, buffers=self.options.buffers)
            await self._replay(pipeline, tenants)
            self.report.rejected = [asdict(r) for r in pipeline.rejected[:100]]
            if self.run_.target == "shadow":
                await self._switch(pipeline, tenants)
            elif self.run_.target == "verify":
                await self._verify(tenants)
            else:
                await finish_run(self.admin, self.run_.run_id, "done", {"events": self.report.events})
                self.report.status = "done"
                self.report.digest = await digest(self.admin, self.live, tenants, self.options.scope.user_id)
        finally:
            await self.resources.on_stop()
        return self.report

    async def _tenants(self) -> list[str]:
        if self.options.scope.tenant_id is not None:
            return [self.options.scope.tenant_id]
        cur = await self.admin.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")
        return [str(row[0]) for row in await cur.fetchall()]

    async def _end(self, tenant: str) -> int:
        async with tenant_transaction(self.resources.pool, tenant, actor="replay") as conn:
            return await log_end(conn, tenant)

    async def _replay(self, pipeline: ReplayPipeline, tenants: list[str]) -> None:
        self.marks = await checkpoints(self.admin, self.run_.run_id)
        ends = {tenant: await self._end(tenant) for tenant in tenants}
        remaining = 0
        for tenant in tenants:
            async with tenant_transaction(self.resources.pool, tenant, actor="replay") as conn:
                after = self.marks.get(tenant, Checkpoint()).done_seq
                remaining += await count_events(conn, tenant, self.filter, after=after, upto=ends[tenant])
        done = sum(mark.events_done for mark in self.marks.values())
        self.progress = Progress(done + remaining, done=done, label=f"replay {str(self.run_.run_id)[:8]}")
        await note_run(self.admin, self.run_.run_id, events_total=done + remaining)
        started = time.monotonic()
        for tenant in tenants:
            await self._replay_tenant(pipeline, tenant, ends[tenant])
        if self.run_.target != "in-place":
            for _ in range(CATCH_UP_ROUNDS):  # events logged meanwhile
                if await self._catch_up(pipeline, tenants) < self.run_.batch_size:
                    break
        self.report.replay_s = round(time.monotonic() - started, 3)
        self.report.events = self.progress.done - done
        self.report.events_per_s = round(self.report.events / self.report.replay_s, 1) if self.report.replay_s else 0.0
        self.progress.finish(f"{self.report.events:,} events in {self.report.replay_s:.1f} s")

    async def _catch_up(self, pipeline: ReplayPipeline, tenants: list[str]) -> int:
        moved = 0
        for tenant in tenants:
            end = await self._end(tenant)
            if end > self.read_to.get(tenant, 0):
                moved += await self._replay_tenant(pipeline, tenant, end)
        return moved

    async def _replay_tenant(self, pipeline: ReplayPipeline, tenant: str, upto: int) -> int:
        mark = self.marks.get(tenant, Checkpoint())
        processed = 0
        while True:
            async with tenant_transaction(self.resources.pool, tenant, actor="replay") as conn:
                events = await read_events(
                    conn, tenant, self.filter, after=mark.done_seq, upto=upto, limit=self.run_.batch_size
                )
            if not events:
                break
            await pipeline.apply(events)
            mark = Checkpoint(events[-1].seq, mark.events_done + len(events))
            await save_checkpoint(self.admin, self.run_.run_id, tenant, mark)
            self.marks[tenant] = mark
            processed += len(events)
            self.progress.advance(len(events))
            self.batches += 1
            if self.options.fail_after_batches is not None and self.batches >= self.options.fail_after_batches:
                log.error("replay: simulated crash after %d batches", self.batches)
                os._exit(CRASH_EXIT)
        self.read_to[tenant] = max(self.read_to.get(tenant, 0), upto)
        return processed

    async def _switch(self, pipeline: ReplayPipeline, tenants: list[str]) -> None:
        deadline = time.monotonic() + self.options.switch_timeout_s
        delay = 0.2
        started = time.monotonic()
        while True:
            try:
                await self._switch_once(pipeline, tenants)
                break
            except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected, _Orphans) as exc:
                if time.monotonic() > deadline:
                    raise ReplayError(
                        f"could not switch replay {self.run_.run_id} within {self.options.switch_timeout_s:.0f} s:"
                        f" {exc}; the rebuilt tables stay in schema {self.run_.shadow_schema}: run the same"
                        " `memstream replay` again to retry the switch"
                    ) from exc
                log.info("replay: switch postponed (%s); retrying in %.1f s", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                await self._catch_up(pipeline, tenants)
        self.report.switch_s = round(time.monotonic() - started, 3)
        self.report.status = "switched"
        assert self.run_.shadow_schema is not None
        await drop_shadow(self.admin, self.run_.shadow_schema)
        self.report.digest = await digest(self.admin, self.live, tenants, self.options.scope.user_id)

    async def _switch_once(self, pipeline: ReplayPipeline, tenants: list[str]) -> None:
        shadow = self.run_.shadow_schema
        assert shadow is not None
        user = self.options.scope.user_id
        async with await psycopg.AsyncConnection.connect(self.settings.require_owner_database_url()) as conn:
            async with conn.transaction():
                await lock_live(conn, self.live, timeout_s=3.0)
                # Nothing reaches the live tables now: replay what was logged since the last round.
                await self._catch_up(pipeline, tenants)
                scopes = [SwitchScope(t, user, self.read_to.get(t, 0)) for t in tenants]
                for scope in scopes:
                    await act_as(conn, scope.tenant_id, actor="replay")
                    found = await orphans(conn, self.live, scope)
                    if found:
                        raise _Orphans(f"tenant {scope.tenant_id} has rows from events not yet in the log: {found}")
                switched: dict[str, Any] = {}
                for scope in scopes:
                    await act_as(conn, scope.tenant_id, actor="replay")
                    carried = await carry_over(conn, self.live, shadow, scope)
                    copied = await replace_rows(conn, self.live, shadow, scope)
                    detail = {"run_id": str(self.run_.run_id), "scope": self.run_.scope, "rows": copied,
                              "carried_over_episodes": carried, "log_position": scope.upto}  # fmt: skip
                    await append_audit(conn, tenant_id=scope.tenant_id, actor="replay", action="memory.rebuild",
                                       subject=str(self.run_.run_id), detail=detail)  # fmt: skip
                    switched[scope.tenant_id] = {"rows": copied, "carried_over_episodes": carried}
                await finish_run(conn, self.run_.run_id, "switched", {"events": self.report.events})
        self.report.switched = switched

    async def _verify(self, tenants: list[str]) -> None:
        shadow = self.run_.shadow_schema
        assert shadow is not None
        user = self.options.scope.user_id
        self.report.digest = await digest(self.admin, shadow, tenants, user)
        self.report.live_digest = await digest(self.admin, self.live, tenants, user)
        different = differences(self.report.digest, self.report.live_digest)
        self.report.matches = not different
        await drop_shadow(self.admin, shadow)
        await finish_run(self.admin, self.run_.run_id, "verified", {"matches": not different, "differ": different})
        self.report.status = "verified"


async def scope_digest(settings: Settings, scope: Scope) -> Digest:
    """The digest of the live memory of a scope (``memstream replay --digest``)."""
    async with await psycopg.AsyncConnection.connect(settings.require_owner_database_url(), autocommit=True) as conn:
        await check_schema(conn)
        if scope.tenant_id is not None:
            tenants = [scope.tenant_id]
        else:
            cur = await conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")
            tenants = [str(row[0]) for row in await cur.fetchall()]
        return await digest(conn, await live_schema(conn), tenants, scope.user_id)
