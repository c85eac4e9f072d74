"""Replay runs and their checkpoints (migration 0006), kept by the owner role that runs replays.

A run is found again by its scope and target, so `memstream replay` after a crash resumes
where the last checkpoint says; an advisory lock keeps two processes off the same run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

#: Advisory-lock namespace of replay runs (the first key of the two-key form).
_LOCK_SPACE = 0x72706C79  # "rply"


@dataclass
class ReplayRun:
    run_id: uuid.UUID
    scope_key: str
    scope: dict[str, Any]
    target: str
    shadow_schema: str | None
    batch_size: int
    re_extract: bool
    status: str = "running"
    events_total: int = 0
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Checkpoint:
    done_seq: int = 0
    events_done: int = 0


async def unfinished_run(conn: psycopg.AsyncConnection[Any], scope_key: str, target: str) -> ReplayRun | None:
    """The latest run of this scope and target that neither finished nor was abandoned."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            "SELECT run_id, scope_key, scope, target, shadow_schema, batch_size, re_extract, status, events_total,"
            " detail FROM replay_runs WHERE scope_key = %s AND target = %s AND status = 'running'"
            " ORDER BY started_at DESC LIMIT 1",
            (scope_key, target),
        )
        row = await cur.fetchone()
    return ReplayRun(**row) if row else None


async def create_run(conn: psycopg.AsyncConnection[Any], run: ReplayRun) -> None:
    await conn.execute(
        "INSERT INTO replay_runs (run_id, scope_key, scope, target, shadow_schema, batch_size, re_extract, status,"
        " events_total, detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (run.run_id, run.scope_key, Jsonb(run.scope), run.target, run.shadow_schema, run.batch_size,
         run.re_extract, run.status, run.events_total, Jsonb(run.detail)),
    )  # fmt: skip


async def finish_run(
    conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID, status: str, detail: dict[str, Any] | None = None
) -> None:
    await conn.execute(
        "UPDATE replay_runs SET status = %s, detail = detail || %s, updated_at = clock_timestamp(),"
        " finished_at = clock_timestamp() WHERE run_id = %s",
        (status, Jsonb(detail or {}), run_id),
    )


async def note_run(conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID, *, events_total: int) -> None:
    await conn.execute(
        "UPDATE replay_runs SET events_total = %s, updated_at = clock_timestamp() WHERE run_id = %s",
        (events_total, run_id),
    )


async def checkpoints(conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID) -> dict[str, Checkpoint]:
    cur = await conn.execute(
        "SELECT tenant_id, done_seq, events_done FROM replay_progress WHERE run_id = %s", (run_id,)
    )
    return {row[0]: Checkpoint(int(row[1]), int(row[2])) for row in await cur.fetchall()}


async def save_checkpoint(
    conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID, tenant_id: str, checkpoint: Checkpoint
) -> None:
    await conn.execute(
        "INSERT INTO replay_progress (run_id, tenant_id, done_seq, events_done) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (run_id, tenant_id) DO UPDATE SET done_seq = EXCLUDED.done_seq,"
        " events_done = EXCLUDED.events_done",
        (run_id, tenant_id, checkpoint.done_seq, checkpoint.events_done),
    )


def _lock_key(run_id: uuid.UUID) -> int:
    return int.from_bytes(run_id.bytes[:4], "big", signed=True)


async def try_lock_run(conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID) -> bool:
    """Hold the run for this session (released when it ends, e.g. when the process dies)."""
    cur = await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_SPACE, _lock_key(run_id)))
    row = await cur.fetchone()
    return bool(row and row[0])


async def unlock_run(conn: psycopg.AsyncConnection[Any], run_id: uuid.UUID) -> None:
    await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_LOCK_SPACE, _lock_key(run_id)))
