"""Schema migrations: numbered SQL files applied once each, in order, as the owner role."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from sinks.errors import SchemaNotReadyError

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
#: Serialises concurrent migrators (two `memstream up`, or CI and a developer).
_LOCK_KEY = 0x6D656D73  # "mems"

#: Tables the app role may read and append to. Nothing is granted UPDATE or DELETE
#: on the event log; its triggers refuse them even for the owner.
APP_PRIVILEGES: dict[str, tuple[str, ...]] = {
    "event_log": ("SELECT", "INSERT"),
    # UPDATE: archiving and re-indexing; DELETE: expiry and forgetting.
    "episodes": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    # Kept by the triggers on episodes (migration 0009): the app only reads them.
    "episode_counts": ("SELECT",),
    "episode_terms": ("SELECT",),
    # Kept by the triggers on what a read returns (migration 0014): the app only reads it.
    "memory_generations": ("SELECT",),
    "facts": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    "edges": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    # INSERT: a skill's first outcome (ON CONFLICT DO NOTHING); its counters are in skill_runs.
    "skills": ("SELECT", "INSERT"),
    "skill_runs": ("SELECT", "INSERT"),
    "tenants": ("SELECT", "INSERT"),
    "erasures": ("SELECT",),
    "erased_events": ("SELECT",),
    "consents": ("SELECT",),
    # Tombstones of memories forgotten one by one (migration 0010): written, never changed.
    "forgotten_memories": ("SELECT", "INSERT"),
    "forgotten_statements": ("SELECT", "INSERT"),
    "audit_log": ("SELECT", "INSERT"),
    "audit_outbox": ("SELECT", "DELETE"),
    "permission_rules": ("SELECT", "INSERT", "DELETE"),
    "tenant_settings": ("SELECT", "INSERT", "UPDATE"),
    # Access statistics (migration 0013): a read counts itself (an upsert); they go with their
    # memory when it is forgotten, expires or its user is erased.
    "memory_access": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    # Recorded LLM extraction results (migration 0006); replays run as the owner.
    "extractions": ("SELECT", "INSERT"),
}
#: SECURITY DEFINER functions the app role may call (EXECUTE is revoked from PUBLIC).
APP_FUNCTIONS = (
    "memstream_erase_user(text)",
    "memstream_consent_user(text)",
    "memstream_api_key(text)",
    "memstream_skip_forgotten(text, uuid[], text[], timestamptz[])",
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    found = []
    for entry in resources.files("sinks.postgres").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(versions) != len(set(versions)):
        raise SchemaNotReadyError(f"two migrations share a version number: {versions}")
    return found


def latest_version() -> int:
    return migrations()[-1].version


def apply_migrations(owner_url: str, *, app_role: str | None = None) -> list[int]:
    """Apply every pending migration; grant the app role its privileges. Returns what ran."""
    applied: list[int] = []
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS memstream_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM memstream_migrations")}
            for migration in migrations():
                if migration.version in done:
                    continue
                log.info("applying migration %04d_%s", migration.version, migration.name)
                with conn.transaction():
                    conn.execute(migration.sql.encode("utf-8"))
                    conn.execute(
                        "INSERT INTO memstream_migrations (version, name) VALUES (%s, %s)",
                        (migration.version, migration.name),
                    )
                applied.append(migration.version)
            if app_role:
                grant_app_role(conn, app_role)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied


def grant_app_role(conn: psycopg.Connection[tuple[object, ...]], role: str) -> None:
    """Least privilege for the role the worker and gateway connect as."""
    current = conn.execute("SELECT current_user").fetchone()
    if current is not None and current[0] == role:
        log.warning("the app and owner roles are the same (%s): no separation of privileges", role)
        return
    ident = sql.Identifier(role)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(ident))
    conn.execute(sql.SQL("GRANT SELECT ON memstream_migrations TO {}").format(ident))
    # Exactly the listed privileges: what an earlier version granted and this one no longer
    # needs is taken back (in one transaction, so a running app never sees a table without them).
    with conn.transaction():
        for table, privileges in APP_PRIVILEGES.items():
            conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(sql.Identifier(table), ident))
            conn.execute(
                sql.SQL("GRANT {} ON {} TO {}").format(
                    sql.SQL(", ").join(sql.SQL(p) for p in privileges), sql.Identifier(table), ident
                )
            )
    for function in APP_FUNCTIONS:
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(function), ident))


async def text_search_configs(conn: psycopg.AsyncConnection[Any]) -> list[str]:
    """The text-search configurations this database has (english, german, simple, ...)."""
    cur = await conn.execute("SELECT cfgname FROM pg_ts_config ORDER BY cfgname")
    return [str(r[0]) for r in await cur.fetchall()]


async def check_text_search_config(conn: psycopg.AsyncConnection[Any], name: str) -> None:
    have = await text_search_configs(conn)
    if name.removeprefix("pg_catalog.") not in have:
        raise SchemaNotReadyError(
            f"MEMSTREAM_TEXT_SEARCH_CONFIG={name!r} is not a text-search configuration of this database"
            f" (it has: {', '.join(have)})"
        )


async def check_schema(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
    """Fail loudly when the database is behind this code (run `memstream migrate`)."""
    try:
        cur = await conn.execute("SELECT coalesce(max(version), 0) FROM memstream_migrations")
    except psycopg.errors.UndefinedTable as exc:
        raise SchemaNotReadyError(
            "the database has no memstream schema: run `memstream migrate` (or `memstream up`)"
        ) from exc
    row = await cur.fetchone()
    have = int(row[0]) if row else 0  # type: ignore[call-overload]
    want = latest_version()
    if have < want:
        raise SchemaNotReadyError(
            f"the database schema is at version {have}, this code needs {want}: run `memstream migrate`"
        )
