"""Candidates for retrieval over every kind of memory: episodes (episodic turns, procedural
lessons, daily summaries), current facts, and skills — by vector distance and by full text.

Scope, exactly as the seeds define it: the caller's user, and with a project P only P's
memory and memory of no project (`global`); session-scoped facts only inside their session.
Expired, superseded and archived rows are never candidates. Every value is a bind
parameter; the only composed SQL is the HNSW cast's dimension, an int checked here.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from itertools import zip_longest
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector import Vector
from psycopg import sql
from psycopg.rows import dict_row

from memstream.settings import VectorIndex
from sinks.postgres.queries.skills import VISIBLE_SKILLS

Kind = Literal["episode", "fact", "skill"]
#: What callers filter on: an episode's memory_type, or "fact" / "skill".
MEMORY_TYPES = ("episodic", "procedural", "summary", "fact", "skill")
EPISODE_TYPES = ("episodic", "procedural", "summary")


@dataclass(frozen=True)
class Filters:
    tenant_id: str
    user_id: str
    project_id: str | None = None
    session_id: str | None = None
    memory_types: tuple[str, ...] = MEMORY_TYPES
    #: Facts only: restrict to these scopes.
    scopes: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: Any of these tags (an episode's tags, a fact's category).
    tags: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id, "user_id": self.user_id, "project_id": self.project_id,
            "session_id": self.session_id, "episode_types": [t for t in self.memory_types if t in EPISODE_TYPES],
            "scopes": list(self.scopes) if self.scopes else None, "since": self.since, "until": self.until,
            "tags": list(self.tags) or None,
        }  # fmt: skip


@dataclass
class Candidate:
    kind: Kind
    id: uuid.UUID
    memory_type: str
    content: str
    created_at: datetime
    importance: float
    tags: list[str]
    embedding: npt.NDArray[np.float32]
    session_id: str | None = None
    project_id: str | None = None
    agent_id: str | None = None
    role: str | None = None
    scope: str | None = None
    entity: str | None = None
    distance: float | None = None
    text_rank: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_EPISODE_WHERE = """
    tenant_id = %(tenant_id)s AND user_id = %(user_id)s
    AND (%(project_id)s::text IS NULL OR project_id = %(project_id)s OR project_id IS NULL)
    AND (expires_at IS NULL OR expires_at > now()) AND archived_at IS NULL
    AND memory_type = ANY(%(episode_types)s::text[])
    AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    AND (%(tags)s::text[] IS NULL OR tags && %(tags)s::text[])
"""
_EPISODE_COLUMNS = (
    "event_id AS id, memory_type, content, created_at, importance, tags, embedding, session_id, project_id,"
    " agent_id, role"
)
_FACT_WHERE = """
    tenant_id = %(tenant_id)s AND user_id = %(user_id)s AND valid_to IS NULL
    AND (expires_at IS NULL OR expires_at > now())
    AND (scope = 'global'
         OR (scope = 'project' AND (%(project_id)s::text IS NULL OR project_id = %(project_id)s))
         OR (scope = 'session' AND session_id = %(session_id)s))
    AND (%(scopes)s::text[] IS NULL OR scope = ANY(%(scopes)s::text[]))
    AND (%(since)s::timestamptz IS NULL OR valid_from >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR valid_from < %(until)s)
    AND (%(tags)s::text[] IS NULL OR category = ANY(%(tags)s::text[]))
"""
_FACT_COLUMNS = (
    "fact_id AS id, 'fact' AS memory_type, entity || ': ' || summary AS content, valid_from AS created_at,"
    " importance, ARRAY[category] AS tags, embedding, session_id, project_id, agent_id, scope, entity"
)
#: The caller's user's skills (a skill's record is the runs the reader may see: ``VISIBLE_SKILLS``).
_SKILL_WHERE = "tenant_id = %(tenant_id)s AND user_id = %(user_id)s"
_SKILL_COLUMNS = (
    "skill_id AS id, 'skill' AS memory_type, name, description, steps, attempts, successes, last_feedback,"
    " coalesce(last_used_at, created_at) AS created_at, embedding"
)
#: An OR of the query's lexemes (stemmed, stopwords dropped): a question rarely shares all its
#: words with the answer, so ranking (cover density) decides, not an AND. Facts and skills are
#: few per user; episodes use the IDF-weighted query below.
_OR_QUERY = (
    "(SELECT array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(tsvector_to_array("
    "to_tsvector(%(config)s::regconfig, %(text)s))) AS l), ' | ')::tsquery AS q) AS t"
)


def _distance(strategy: VectorIndex, dim: int) -> sql.Composable:
    if not 0 < dim <= 16_000:
        raise ValueError(f"implausible vector dimension {dim}")
    if strategy == "hnsw":  # must match the partial expression index (vector_index.py)
        return sql.SQL("embedding::vector({dim}) <=> %(embedding)s::vector({dim})").format(dim=sql.Literal(dim))
    return sql.SQL("embedding <=> %(embedding)s")


def _vector_sql(kind: Kind, distance: sql.Composable) -> sql.Composed:
    if kind == "episode":
        table, columns, where = "episodes", _EPISODE_COLUMNS, _EPISODE_WHERE + " AND embedding_model = %(model)s"
    elif kind == "fact":
        table, columns, where = "facts", _FACT_COLUMNS, _FACT_WHERE + " AND embedding_model = %(model)s"
    else:
        return sql.SQL(
            "SELECT {cols}, {d} AS distance FROM {skills} WHERE {where} ORDER BY {d} LIMIT %(limit)s"
        ).format(
            cols=sql.SQL(_SKILL_COLUMNS),
            d=distance,
            skills=sql.SQL(VISIBLE_SKILLS),
            where=sql.SQL(_SKILL_WHERE + " AND embedding_model = %(model)s"),
        )
    return sql.SQL("SELECT {cols}, {d} AS distance FROM {table} WHERE {where} ORDER BY {d} LIMIT %(limit)s").format(
        cols=sql.SQL(columns), d=distance, table=sql.Identifier(table), where=sql.SQL(where)
    )


_LEXEMES_SQL = "SELECT tsvector_to_array(to_tsvector(%(config)s::regconfig, %(text)s))"
#: Document frequencies of the query's lexemes in a sample of the user's episodes (one pass
#: over at most SAMPLE rows; an exact count of a common word over 100k rows costs ~50 ms each).
_SAMPLE_DF_SQL = sql.SQL(
    "WITH s AS MATERIALIZED (SELECT tsv FROM episodes WHERE {where} LIMIT %(sample)s)"
    " SELECT (SELECT count(*) FROM s) AS n, l.lexeme, (SELECT count(*) FROM s WHERE s.tsv @@ l.q) AS df"
    " FROM unnest(%(lexemes)s::text[], %(terms)s::tsquery[]) AS l(lexeme, q)"
).format(where=sql.SQL(_EPISODE_WHERE))
#: Episodes holding any selective lexeme, scored by the IDF of the lexemes they hold (BM25
#: without term frequency: turns are short), cover density breaking ties.
_EPISODE_TEXT_SQL = (
    "SELECT {cols}, {score} + 0.01 * ts_rank_cd(tsv, %(any)s::tsquery) AS text_rank FROM episodes"
    " WHERE {where} AND tsv @@ %(filter)s::tsquery ORDER BY text_rank DESC, created_at DESC LIMIT %(limit)s"
)
#: Rows sampled for document frequencies; beyond it IDF hardly changes.
SAMPLE = 2_000
#: A lexeme in more than this share of the user's episodes (a speaker's name, "deploy" in a
#: deployment log) does not select candidates: it would pull in a large part of the corpus.
COMMON_SHARE = 0.05
MIN_COMMON_DF = 3


@dataclass(frozen=True)
class TermWeights:
    """The query's lexemes with their IDF, and which ones select candidates."""

    idf: dict[str, float]
    selective: list[str]


def term_weights(n_docs: int, df: dict[str, int], *, df_cap: int) -> TermWeights:
    """IDF (BM25's, ``ln(1 + (N - df + 0.5) / (df + 0.5))``) per lexeme; lexemes in ``df_cap``
    or more of the ``n_docs`` sampled are common: they only add to a score. When every lexeme
    is common the two least common select (an agent asking about its own name)."""
    idf = {t: math.log(1 + (n_docs - min(d, n_docs) + 0.5) / (d + 0.5)) for t, d in df.items()}
    selective = sorted(t for t, d in df.items() if d < df_cap)
    if not selective and df:
        selective = sorted(df, key=lambda t: (df[t], t))[:2]
    return TermWeights(idf, selective)


def tsquery_term(lexeme: str) -> str:
    """A lexeme as a tsquery literal, not normalised again (quotes and backslashes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


async def _episode_text(
    cur: psycopg.AsyncCursor[dict[str, Any]], params: dict[str, Any], lexemes: list[str]
) -> list[dict[str, Any]]:
    terms = [tsquery_term(t) for t in lexemes]
    await cur.execute(_SAMPLE_DF_SQL, {**params, "sample": SAMPLE, "lexemes": lexemes, "terms": terms})
    rows = await cur.fetchall()
    n_docs = int(rows[0]["n"]) if rows else 0
    if n_docs == 0:
        return []
    df = {str(r["lexeme"]): int(r["df"]) for r in rows}
    weights = term_weights(n_docs, df, df_cap=max(MIN_COMMON_DF, math.ceil(n_docs * COMMON_SHARE)))
    score = sql.SQL(" + ").join(
        sql.SQL("CASE WHEN tsv @@ {}::tsquery THEN {}::float8 ELSE 0 END").format(
            sql.Placeholder(f"t{i}"), sql.Placeholder(f"w{i}")
        )
        for i in range(len(lexemes))
    )
    query = sql.SQL(_EPISODE_TEXT_SQL).format(
        cols=sql.SQL(_EPISODE_COLUMNS), score=score, where=sql.SQL(_EPISODE_WHERE)
    )
    # A custom plan: a generic one cannot see how selective the filter's words are.
    await cur.execute("SET LOCAL plan_cache_mode = force_custom_plan")
    await cur.execute(
        query,
        {
            **params,
            **{f"t{i}": term for i, term in enumerate(terms)},
            **{f"w{i}": weights.idf[t] for i, t in enumerate(lexemes)},
            "any": " | ".join(terms),
            "filter": " | ".join(tsquery_term(t) for t in weights.selective),
        },
    )
    return await cur.fetchall()


_TEXT_SQL: dict[Kind, sql.Composed] = {
    "fact": sql.SQL(
        "SELECT {cols}, ts_rank_cd(tsv, t.q) AS text_rank FROM facts, {q}"
        " WHERE {where} AND tsv @@ t.q ORDER BY text_rank DESC LIMIT %(limit)s"
    ).format(cols=sql.SQL(_FACT_COLUMNS), q=sql.SQL(_OR_QUERY), where=sql.SQL(_FACT_WHERE)),
    "skill": sql.SQL(
        "SELECT {cols}, ts_rank_cd(to_tsvector(%(config)s::regconfig, name || ' ' || description), t.q)"
        " AS text_rank FROM {skills}, {q} WHERE {where}"
        " AND to_tsvector(%(config)s::regconfig, name || ' ' || description) @@ t.q"
        " ORDER BY text_rank DESC LIMIT %(limit)s"
    ).format(
        cols=sql.SQL(_SKILL_COLUMNS), skills=sql.SQL(VISIBLE_SKILLS), q=sql.SQL(_OR_QUERY), where=sql.SQL(_SKILL_WHERE)
    ),
}


def _kinds(filters: Filters) -> list[Kind]:
    kinds: list[Kind] = []
    if any(t in EPISODE_TYPES for t in filters.memory_types):
        kinds.append("episode")
    if "fact" in filters.memory_types:
        kinds.append("fact")
    if "skill" in filters.memory_types and not filters.tags:
        kinds.append("skill")
    return kinds


def _as_array(value: Any) -> npt.NDArray[np.float32]:
    return np.asarray(value.to_numpy() if isinstance(value, Vector) else value, dtype=np.float32)


def _candidate(kind: Kind, row: dict[str, Any]) -> Candidate:
    if kind == "skill":
        rate = (row["successes"] + 1) / (row["attempts"] + 2)
        steps = "; ".join(str(s) for s in row["steps"]) or "no steps recorded"
        content = f"Skill {row['name']} (success rate {rate:.0%}): {steps}"
        if row["last_feedback"]:
            content += f". Last feedback: {row['last_feedback']}"
        return Candidate(
            kind, row["id"], "skill", content, row["created_at"], rate, [], _as_array(row["embedding"]),
            distance=row.get("distance"), text_rank=row.get("text_rank"), entity=row["name"],
        )  # fmt: skip
    return Candidate(
        kind, row["id"], row["memory_type"], row["content"], row["created_at"], float(row["importance"]),
        list(row["tags"] or []), _as_array(row["embedding"]), session_id=row.get("session_id"),
        project_id=row.get("project_id"), agent_id=row.get("agent_id"), role=row.get("role"),
        scope=row.get("scope"), entity=row.get("entity"), distance=row.get("distance"),
        text_rank=row.get("text_rank"),
    )  # fmt: skip


async def vector_candidates(
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    embedding: npt.NDArray[np.float32],
    *,
    model: str,
    limit: int,
    strategy: VectorIndex,
) -> list[Candidate]:
    """The nearest candidates of every requested kind, nearest first (one embedding space)."""
    params = {**filters.params(), "embedding": embedding, "model": model, "limit": limit}
    out: list[Candidate] = []
    async with conn.transaction():
        if strategy == "hnsw":
            # Under filters (and RLS) a plain HNSW scan returns too few rows (docs/measurements.md).
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        async with conn.cursor(row_factory=dict_row) as cur:
            for kind in _kinds(filters):
                distance = _distance(strategy if kind == "episode" else "exact", int(embedding.shape[0]))
                await cur.execute(_vector_sql(kind, distance), params)
                out.extend(_candidate(kind, row) for row in await cur.fetchall())
    out.sort(key=lambda c: c.distance if c.distance is not None else 2.0)
    return out[:limit]


async def text_candidates(
    conn: psycopg.AsyncConnection[Any], filters: Filters, text: str, *, limit: int, config: str = "english"
) -> list[Candidate]:
    """Candidates of every requested kind sharing words with ``text``, best first within each
    kind (episodes by IDF, facts and skills by cover density), kinds interleaved by rank."""
    params = {**filters.params(), "text": text, "limit": limit, "config": config}
    by_kind: list[list[Candidate]] = []
    async with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(_LEXEMES_SQL, params)
        row = await cur.fetchone()
        lexemes = sorted(set(row["tsvector_to_array"] or [])) if row else []
        if not lexemes:
            return []
        for kind in _kinds(filters):
            if kind == "episode":
                rows = await _episode_text(cur, params, lexemes)
            else:
                await cur.execute(_TEXT_SQL[kind], params)
                rows = await cur.fetchall()
            by_kind.append([_candidate(kind, r) for r in rows])
    # Scores of different kinds are not comparable: interleave them rank by rank.
    out = [c for rank in zip_longest(*by_kind) for c in rank if c is not None]
    return out[:limit]
