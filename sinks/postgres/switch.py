"""The switch: rebuilt rows replace the live ones, for one scope, in one transaction.

The live tables stay where they are (their indexes, row-level security, grants and triggers
never change); the switch locks them against writers (``SHARE ROW EXCLUSIVE``: readers are
not blocked, so the gateway keeps answering from the old rows until the commit), then per
tenant:

1. counts live rows derived from events the rebuild has not seen (``orphans``: the memory
   worker may be ahead of the event log) — the caller retries later rather than lose them;
2. carries over what the event log cannot re-derive: episodes whose origin is not in the log
   (written by hand, or in flight); access statistics live apart (``memory_access``) and stay;
3. deletes the scope's live rows and copies the rebuilt ones in, skipping users erased
   meanwhile and memories forgotten meanwhile (``forgetting.py``: the version before a fact
   left out takes its place, as it did in the live tables).

Callers act for each tenant (``act_as``) inside the caller's transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from sinks.postgres.event_log import MAINTENANCE_TOPIC
from sinks.postgres.forgetting import Gap, take_over
from sinks.postgres.shadow import columns, table

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SwitchScope:
    tenant_id: str
    #: None: the whole tenant. A user's rebuild replaces only the user's own rows.
    user_id: str | None
    #: The log position the rebuild covers.
    upto: int

    def params(self) -> dict[str, Any]:
        return {"tenant": self.tenant_id, "user": self.user_id, "upto": self.upto, "topic": MAINTENANCE_TOPIC}


#: (table, the event a row comes from and its time: what ``memstream_forgotten`` is asked about).
#: Skills come after their runs: a skill is copied only when one of its runs was.
_TABLES = (
    ("episodes", ("event_id", "created_at")),
    ("facts", ("source_event_id", "valid_from")),
    ("edges", ("source_event_id", "valid_from")),
    ("skill_runs", ("event_id", "at")),
    ("skills", None),
)
#: What was forgotten on its own while the replay ran (migration 0010) stays out too; an edge
#: follows its fact version.
_ALSO_FORGOTTEN = {
    "episodes": " AND NOT {live}.memstream_episode_forgotten(s.tenant_id, s.event_id)",
    "facts": " AND NOT {live}.memstream_statement_forgotten(s.tenant_id, s.user_id, s.subject_key, s.source_event_id)",
    "edges": " AND EXISTS (SELECT 1 FROM {live}.facts f WHERE f.tenant_id = s.tenant_id AND f.fact_id = s.fact_id)",
}
#: Where a row of each table came from, to find the ones the log does not (yet) explain.
_SOURCES = {
    "facts": "SELECT s.event_id FROM {t} f CROSS JOIN LATERAL unnest(f.sources) AS s(event_id)"
    " WHERE f.tenant_id = %(tenant)s AND (%(user)s::text IS NULL OR f.user_id = %(user)s)",
    "edges": "SELECT source_event_id FROM {t} WHERE tenant_id = %(tenant)s"
    " AND (%(user)s::text IS NULL OR user_id = %(user)s)",
    "skill_runs": "SELECT event_id FROM {t} WHERE tenant_id = %(tenant)s"
    " AND (%(user)s::text IS NULL OR user_id = %(user)s)",
}
_IN_LOG = "SELECT 1 FROM {log} l WHERE l.tenant_id = %(tenant)s AND l.seq <= %(upto)s AND "
_UUID = "'^[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{12}}$'"
#: An episode the log can re-derive: a turn, a lesson from a tool outcome, a daily summary.
_DERIVABLE = (
    "(e.memory_type = 'episodic' AND EXISTS (" + _IN_LOG + "l.event_id = e.event_id))"
    " OR (e.memory_type = 'procedural' AND e.metadata->>'source_event_id' ~ "
    + _UUID
    + " AND EXISTS ("
    + _IN_LOG
    + "l.event_id = (e.metadata->>'source_event_id')::uuid))"
    " OR (e.memory_type = 'summary' AND EXISTS (" + _IN_LOG + "l.source_topic = %(topic)s"
    " AND l.metadata->>'summary_event_id' = e.event_id::text))"
)


async def lock_live(conn: psycopg.AsyncConnection[Any], live: str, *, timeout_s: float) -> None:
    """Block writers of the live projections until the transaction ends (readers go on)."""
    await conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(timeout_s * 1000)}ms",))
    tables = sql.SQL(", ").join(table(live, name) for name in ("facts", "edges", "episodes", "skills", "skill_runs"))
    await conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(tables))


async def orphans(conn: psycopg.AsyncConnection[Any], live: str, scope: SwitchScope) -> dict[str, int]:
    """Live rows whose source event is not in the log up to ``scope.upto``, per table."""
    found = {}
    for name, query in _SOURCES.items():
        statement = sql.SQL(
            "SELECT count(*) FROM ({sources}) x(event_id) WHERE NOT EXISTS ({in_log} l.event_id = x.event_id)"
        )
        cur = await conn.execute(
            statement.format(
                sources=sql.SQL(query).format(t=table(live, name)),
                in_log=sql.SQL(_IN_LOG).format(log=table(live, "event_log")),
            ),
            scope.params(),
        )
        row = await cur.fetchone()
        if row and row[0]:
            found[name] = int(row[0])
    return found


def _owned(alias: str) -> sql.Composable:
    return sql.SQL("{a}.tenant_id = %(tenant)s AND (%(user)s::text IS NULL OR {a}.user_id = %(user)s)").format(
        a=sql.Identifier(alias)
    )


async def carry_over(conn: psycopg.AsyncConnection[Any], live: str, shadow: str, scope: SwitchScope) -> int:
    """Copy what the log cannot re-derive into the shadow: episodes whose origin is not in the
    log. Returns the episodes carried over. (Access statistics are no projection: they live
    apart, in ``memory_access``, which no switch touches.)"""
    names = sql.SQL(", ").join(map(sql.Identifier, await columns(conn, live, "episodes")))
    cur = await conn.execute(
        sql.SQL(
            "INSERT INTO {s} ({names}) SELECT {names} FROM {l} AS e WHERE {owned} AND NOT ({derivable})"
            " ON CONFLICT (tenant_id, event_id) DO NOTHING"
        ).format(
            s=table(shadow, "episodes"), l=table(live, "episodes"), names=names, owned=_owned("e"),
            derivable=sql.SQL(_DERIVABLE).format(log=table(live, "event_log")),
        ),
        scope.params(),
    )  # fmt: skip
    return cur.rowcount


async def replace_rows(
    conn: psycopg.AsyncConnection[Any], live: str, shadow: str, scope: SwitchScope
) -> dict[str, int]:
    """Delete the scope's live rows and copy the rebuilt ones in; returns rows copied per table."""
    copied = {}
    for name, origin in _TABLES:
        await conn.execute(
            sql.SQL("DELETE FROM {l} AS d WHERE {owned}").format(l=table(live, name), owned=_owned("d")),
            scope.params(),
        )
        names = sql.SQL(", ").join(map(sql.Identifier, await columns(conn, live, name)))
        if origin is not None:  # skip what was erased meanwhile
            event, when = origin
            keep = sql.SQL(" AND NOT {forgotten}(s.tenant_id, s.user_id, s.{event}, s.{when})").format(
                forgotten=table(live, "memstream_forgotten"), event=sql.Identifier(event), when=sql.Identifier(when)
            )
        else:
            keep = sql.SQL(
                " AND EXISTS (SELECT 1 FROM {runs} r WHERE r.tenant_id = s.tenant_id AND r.skill_id = s.skill_id)"
            ).format(runs=table(live, "skill_runs"))
        if name in _ALSO_FORGOTTEN:
            keep = sql.Composed([keep, sql.SQL(_ALSO_FORGOTTEN[name]).format(live=sql.Identifier(live))])
        cur = await conn.execute(
            sql.SQL("INSERT INTO {l} ({names}) SELECT {names} FROM {s} AS s WHERE {owned}{keep}").format(
                l=table(live, name), s=table(shadow, name), names=names, owned=_owned("s"), keep=keep
            ),
            scope.params(),
        )
        copied[name] = cur.rowcount
    closed = await close_gaps(conn, live, shadow, scope)
    if closed:
        log.info("switch: %d fact versions took the place of versions forgotten during the replay", closed)
    return copied


#: Live versions whose successor in the rebuild was left out, with what that successor held.
_GAPS = """
SELECT p.fact_id, p.user_id, p.subject_key, x.valid_to, x.superseded_by
  FROM {live} AS p JOIN {shadow} AS x ON x.tenant_id = p.tenant_id AND x.fact_id = p.superseded_by
 WHERE {owned}
   AND NOT EXISTS (SELECT 1 FROM {live} AS n WHERE n.tenant_id = p.tenant_id AND n.fact_id = p.superseded_by)
"""


async def close_gaps(conn: psycopg.AsyncConnection[Any], live: str, shadow: str, scope: SwitchScope) -> int:
    """A fact version forgotten while the replay ran is left out of the switch; the version
    before it takes its place (``forgetting.take_over``, whose SQL names the tables unqualified:
    the switch's own connection finds the live ones). Returns how many took a place."""
    closed = 0
    query = sql.SQL(_GAPS).format(live=table(live, "facts"), shadow=table(shadow, "facts"), owned=_owned("p"))
    while True:  # a run of left-out versions is closed one step per round
        cur = await conn.execute(query, scope.params())
        gaps = await cur.fetchall()
        if not gaps:
            return closed
        for fact_id, user_id, subject_key, valid_to, superseded_by in gaps:
            await take_over(conn, scope.tenant_id, user_id, subject_key, fact_id, Gap(valid_to, superseded_by))
        closed += len(gaps)
