"""Shadow tables: where a replay rebuilds the projections, beside the live ones.

A shadow schema (``memstream_replay_<run>``) holds an empty copy of every projection table
(columns, defaults, constraints, unique keys, btree indexes, insert triggers, row-level
security) plus a scratch ``audit_log``. The replay's connections put the schema first on
their ``search_path``, so the very same sink SQL writes there instead of the live tables.
Read-only indexes (GIN full text, HNSW) and generated columns are left out: nothing reads
the shadow but the replay, and the rows are copied into the live tables at the switch, where
those are computed once. Only the owner role (which runs replays) can see the schema.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from sinks.errors import SchemaNotReadyError

#: The tables a replay rebuilds (what the event log projects to in Postgres).
PROJECTIONS = ("episodes", "facts", "edges", "skills", "skill_runs")
#: Written by the sinks beside the projections; in a shadow only as scratch (a rebuild is
#: audited once, at the switch).
SCRATCH = ("audit_log",)
SHADOW_PREFIX = "memstream_replay_"


async def live_schema(conn: psycopg.AsyncConnection[Any]) -> str:
    """The schema the live projections are in (where migrations created them)."""
    cur = await conn.execute(
        "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.oid = to_regclass('episodes')"
    )
    row = await cur.fetchone()
    if row is None:
        raise SchemaNotReadyError("no episodes table: run `memstream migrate`")
    return str(row[0])


def table(schema: str, name: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))


async def _qualified(conn: psycopg.AsyncConnection[Any], schema: str, name: str) -> str:
    """How the catalog functions print a qualified table name (quoted only where needed)."""
    cur = await conn.execute("SELECT format('%%I.%%I', %s::text, %s::text)", (schema, name))
    row = await cur.fetchone()
    assert row is not None
    return str(row[0])


async def _clone_triggers(conn: psycopg.AsyncConnection[Any], live: str, shadow: str, name: str) -> None:
    """Recreate the live table's own row triggers (e.g. the text-search configuration of new
    rows) on the shadow table, from their catalog definitions. The statement triggers that
    keep the live read totals are not copied: the switch's writes to the live table keep them."""
    source, target = await _qualified(conn, live, name), await _qualified(conn, shadow, name)
    await conn.execute("SELECT set_config('search_path', 'pg_catalog', true)")  # fully qualified definitions
    cur = await conn.execute(
        "SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal"
        " AND (tgtype & 1) = 1",  # row triggers: the statement triggers keep live totals (migration 0009)
        (source,),
    )
    definitions = await cur.fetchall()
    for trigger, definition in definitions:
        marker = f" ON {source} "
        if definition.count(marker) != 1:
            raise SchemaNotReadyError(f"cannot copy trigger {trigger} of {source}: unexpected definition {definition}")
        # Catalog text, not user input: DDL cannot take bind parameters.
        await conn.execute(sql.SQL(definition.replace(marker, f" ON {target} ")))


async def _drop_read_indexes(conn: psycopg.AsyncConnection[Any], shadow: str) -> None:
    cur = await conn.execute(
        "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        " JOIN pg_namespace n ON n.oid = i.relnamespace JOIN pg_am a ON a.oid = i.relam"
        " WHERE n.nspname = %s AND a.amname <> 'btree'",
        (shadow,),
    )
    for (index,) in await cur.fetchall():
        await conn.execute(sql.SQL("DROP INDEX {}").format(table(shadow, index)))


async def create_shadow(conn: psycopg.AsyncConnection[Any], shadow: str, live: str) -> None:
    """Create the shadow schema and its empty tables (one transaction)."""
    async with conn.transaction():
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(shadow)))
        tenant = sql.SQL("{}.memstream_current_tenant()").format(sql.Identifier(live))
        for name in PROJECTIONS:
            await conn.execute(
                sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL EXCLUDING GENERATED)").format(
                    table(shadow, name), table(live, name)
                )
            )
            await conn.execute(
                sql.SQL(
                    "ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY;"
                    " CREATE POLICY tenant_isolation ON {t} USING (tenant_id = {f}) WITH CHECK (tenant_id = {f})"
                ).format(t=table(shadow, name), f=tenant)
            )
            await _clone_triggers(conn, live, shadow, name)
            for column in await _generated(conn, live, name):  # LIKE made them plain columns
                await conn.execute(
                    sql.SQL("ALTER TABLE {} DROP COLUMN {}").format(table(shadow, name), sql.Identifier(column))
                )
        for name in SCRATCH:
            await conn.execute(
                sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING IDENTITY)").format(
                    table(shadow, name), table(live, name)
                )
            )
        await _drop_read_indexes(conn, shadow)


async def _generated(conn: psycopg.AsyncConnection[Any], schema: str, name: str) -> list[str]:
    cur = await conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0"
        " AND NOT attisdropped AND attgenerated <> ''",
        (await _qualified(conn, schema, name),),
    )
    return [str(row[0]) for row in await cur.fetchall()]


async def drop_shadow(conn: psycopg.AsyncConnection[Any], shadow: str) -> None:
    if not shadow.startswith(SHADOW_PREFIX):
        raise ValueError(f"{shadow!r} is not a replay's shadow schema")
    await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(shadow)))


async def columns(conn: psycopg.AsyncConnection[Any], schema: str, name: str) -> list[str]:
    """The table's stored (not generated) columns, in order."""
    cur = await conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0"
        " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        (await _qualified(conn, schema, name),),
    )
    return [str(row[0]) for row in await cur.fetchall()]
