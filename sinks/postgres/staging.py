"""Idempotent bulk writes: binary COPY into a temp table, then INSERT ... ON CONFLICT DO NOTHING,
one tenant at a time under row-level security.

Binary COPY is the fastest way in (docs/benchmarks.md: ~35k rows/s with a generated tsvector,
5x text COPY for vectors), and the conflict clause on the event id makes a redelivered
batch a no-op, so at-least-once delivery never duplicates. A batch may hold many
tenants: the staged rows are moved tenant by tenant, each with ``app.tenant_id`` set
(the tables' policies refuse anything else) and with shared locks on the users being
written, skipping forgotten events (``erasure.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from sinks.postgres.erasure import lock_users
from sinks.postgres.tenancy import act_as


@dataclass(frozen=True)
class StagedInsert:
    """Where rows are staged and how they move into their table."""

    table: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    #: The column holding when memstream received the event (``Turn.received_at``), which
    #: erasures and consents are ordered against (never the client's ``event_time``).
    time_column: str
    #: Appended to the INSERT ... SELECT, e.g. an ORDER BY that fixes the append order.
    order_by: tuple[str, ...] = ()
    #: Columns computed once per tenant in the INSERT ... SELECT: (column, SQL expression that
    #: may use ``%(tenant)s``), e.g. the tenant's text-search configuration.
    computed: tuple[tuple[str, str], ...] = ()
    #: Also skip rows whose event id names an episode forgotten on its own
    #: (``memstream_episode_forgotten``, migration 0010).
    skip_forgotten_episodes: bool = False
    #: Staged columns that are only checked, not inserted (the table has no such column).
    staged_only: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        table: str,
        columns: Sequence[tuple[str, str]],
        *,
        time_column: str,
        order_by: tuple[str, ...] = (),
        computed: tuple[tuple[str, str], ...] = (),
        skip_forgotten_episodes: bool = False,
        staged_only: tuple[str, ...] = (),
    ) -> StagedInsert:
        """Build from (column, type) pairs."""
        return cls(
            table,
            tuple(c for c, _ in columns),
            tuple(t for _, t in columns),
            time_column=time_column,
            order_by=order_by,
            computed=computed,
            skip_forgotten_episodes=skip_forgotten_episodes,
            staged_only=staged_only,
        )

    @property
    def stage(self) -> str:
        return f"{self.table}_stage"

    def _create_stage(self) -> sql.Composed:
        cols = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(t))
            for c, t in zip(self.columns, self.types, strict=True)
        )
        return sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} ({}) ON COMMIT DELETE ROWS").format(
            sql.Identifier(self.stage), cols
        )

    def _copy(self) -> sql.Composed:
        return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.Identifier(self.stage), sql.SQL(", ").join(map(sql.Identifier, self.columns))
        )

    def _skip(self) -> sql.Composed:
        """The staged events of a tenant that are forgotten, those forgotten for their user's
        erasure tombstoned by id (``memstream_skip_forgotten``): the insert then skips them."""
        return sql.SQL(
            "SELECT count(*) FROM (SELECT array_agg(s.event_id) AS e, array_agg(s.user_id) AS u,"
            " array_agg(s.{time}) AS t FROM {stage} s WHERE s.tenant_id = %(tenant)s) a,"
            " memstream_skip_forgotten(%(tenant)s, a.e, a.u, a.t)"
        ).format(stage=sql.Identifier(self.stage), time=sql.Identifier(self.time_column))

    def _insert(self) -> sql.Composed:
        inserted = [c for c in self.columns if c not in self.staged_only]
        targets = sql.SQL(", ").join(map(sql.Identifier, (*inserted, *(c for c, _ in self.computed))))
        values = sql.SQL(", ").join([*map(sql.Identifier, inserted), *(sql.SQL(e) for _, e in self.computed)])
        order: sql.Composable = sql.SQL("")
        skip: sql.Composable = sql.SQL("")
        if self.skip_forgotten_episodes:
            skip = sql.SQL(" AND NOT memstream_episode_forgotten(s.tenant_id, s.event_id)")
        if self.order_by:
            order = sql.SQL(" ORDER BY {}").format(sql.SQL(", ").join(map(sql.Identifier, self.order_by)))
        return sql.SQL(
            "INSERT INTO {table} ({targets}) SELECT {values} FROM {stage} s"
            " WHERE s.tenant_id = %(tenant)s AND NOT memstream_forgotten(s.tenant_id, s.user_id, s.event_id, s.{time})"
            "{skip}{order} ON CONFLICT (tenant_id, event_id) DO NOTHING RETURNING event_id"
        ).format(
            table=sql.Identifier(self.table),
            targets=targets,
            values=values,
            stage=sql.Identifier(self.stage),
            time=sql.Identifier(self.time_column),
            skip=skip,
            order=order,
        )

    async def write(
        self, conn: psycopg.AsyncConnection[Any], rows: Iterable[Sequence[Any]]
    ) -> dict[str, list[uuid.UUID]]:
        """Stage and insert rows (in the caller's transaction, or one of its own).

        Rows start with (tenant_id, event_id, ..., user_id at ``columns.index("user_id")``).
        Returns the ids actually inserted, per tenant: a redelivered turn is not among them.
        """
        users_by_tenant: dict[str, set[str]] = {}
        user_at = self.columns.index("user_id")
        inserted: dict[str, list[uuid.UUID]] = {}
        async with conn.transaction():
            await conn.execute(self._create_stage())
            async with conn.cursor() as cur:
                async with cur.copy(self._copy()) as copy:
                    copy.set_types(list(self.types))
                    for row in rows:
                        users_by_tenant.setdefault(row[0], set()).add(row[user_at])
                        await copy.write_row(row)
                for tenant, users in sorted(users_by_tenant.items()):
                    await act_as(conn, tenant, actor="worker")
                    await lock_users(conn, tenant, users)
                    await cur.execute(self._skip(), {"tenant": tenant})  # tombstones what is skipped
                    await cur.execute(self._insert(), {"tenant": tenant})
                    ids = [row[0] for row in await cur.fetchall()]
                    if ids:
                        inserted[tenant] = ids
        return inserted
