"""Idempotent bulk writes: binary COPY into a temp table, then INSERT ... ON CONFLICT DO NOTHING.

Binary COPY is the fastest way in (FACTS.md: ~35k rows/s with a generated
tsvector, 5x text COPY for vectors), and the conflict clause on the event id
makes a redelivered batch a no-op, so at-least-once delivery never duplicates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql


@dataclass(frozen=True)
class StagedInsert:
    """Where rows are staged and how they move into their table."""

    table: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    #: Appended to the INSERT ... SELECT, e.g. an ORDER BY that fixes the append order.
    order_by: tuple[str, ...] = ()

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

    def _insert(self) -> sql.Composed:
        cols = sql.SQL(", ").join(map(sql.Identifier, self.columns))
        order: sql.Composable = sql.SQL("")
        if self.order_by:
            order = sql.SQL(" ORDER BY {}").format(sql.SQL(", ").join(map(sql.Identifier, self.order_by)))
        return sql.SQL(
            "INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage}{order} "
            "ON CONFLICT (tenant_id, event_id) DO NOTHING"
        ).format(
            table=sql.Identifier(self.table),
            cols=cols,
            stage=sql.Identifier(self.stage),
            order=order,
        )

    async def write(self, conn: psycopg.AsyncConnection[Any], rows: Iterable[Sequence[Any]]) -> int:
        """Write rows in one transaction; returns how many were new."""
        async with conn.transaction():
            await conn.execute(self._create_stage())
            async with conn.cursor() as cur:
                async with cur.copy(self._copy()) as copy:
                    copy.set_types(list(self.types))
                    for row in rows:
                        await copy.write_row(row)
                await cur.execute(self._insert())
                return max(cur.rowcount, 0)
