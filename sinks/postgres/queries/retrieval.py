"""Candidates for retrieval over every kind of memory: episodes (episodic turns, procedural
lessons, daily summaries), current facts, and skills — by vector distance and by full text.

Scope, exactly as the seeds define it: the caller's user, and with a project P only P's
memory and memory of no project (`global`); session-scoped facts only inside their session.
Expired, superseded and archived rows are never candidates. Every value is a bind
parameter; the only composed SQL is the HNSW cast's dimension, an int checked here.

Nothing here counts a user's rows at query time: how many episodes a user has and in how
many each word occurs are running totals (``episode_counts``, ``episode_terms``, kept by
triggers, migration 0009), read under the same row-level security as the episodes.
"""

from __future__ import annotations

import functools
import math
import re
import uuid
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from itertools import zip_longest
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from memstream.settings import VectorIndex
from sinks.postgres.queries.skills import VISIBLE_SKILLS, smoothed_success_rate, success_phrase

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
    #: As Postgres sends a ``vector`` (``vector_send``; ``embeddings`` reads many at once):
    #: decoding each row's on its own was a tenth of a search's CPU.
    embedding: bytes
    session_id: str | None = None
    project_id: str | None = None
    agent_id: str | None = None
    role: str | None = None
    scope: str | None = None
    entity: str | None = None
    distance: float | None = None
    text_rank: float | None = None
    #: When the memory stops being returned (None: never): a cached answer holding it ends then.
    expires_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: With a project P, P's episodes and those of no project.
_IN_PROJECT = "(%(project_id)s::text IS NULL OR project_id = %(project_id)s OR project_id IS NULL)"
#: The same rows, named so that no index can serve the condition (``BROAD_PROJECT_SHARE``).
_IN_PROJECT_UNINDEXED = "(%(project_id)s::text IS NULL OR coalesce(project_id, %(project_id)s) = %(project_id)s)"


#: The user's rows.
_OF_USER = "user_id = %(user_id)s"
#: The same rows, named so that no index can serve the condition: the text query finds them
#: through the owner's lexemes (``owner_tsv``, which only the user's rows hold), and the planner
#: intersected that index's bitmap with ``episodes_owner``'s of every row of the user: at a
#: thousand episodes, a third of the query's execution (0.62 -> 0.40 ms, the same rows).
_OF_USER_UNINDEXED = "coalesce(user_id, '') = %(user_id)s"


def _episode_where(in_project: str = _IN_PROJECT, of_user: str = _OF_USER) -> str:
    return f"""
    tenant_id = %(tenant_id)s AND {of_user}
    AND {in_project}
    AND (expires_at IS NULL OR expires_at > now()) AND archived_at IS NULL
    AND memory_type = ANY(%(episode_types)s::text[])
    AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
    AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    AND (%(tags)s::text[] IS NULL OR tags && %(tags)s::text[])
"""


_EPISODE_WHERE = _episode_where()
_EPISODE_COLUMNS = (
    "event_id AS id, memory_type, content, created_at, importance, tags, vector_send(embedding), session_id,"
    " project_id, agent_id, role, expires_at"
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
#: The caller's user's skills (a skill's record is the runs the reader may see: ``VISIBLE_SKILLS``).
_SKILL_WHERE = "tenant_id = %(tenant_id)s AND user_id = %(user_id)s"
#: An OR of the query's lexemes (stemmed, stopwords dropped): a question rarely shares all its
#: words with the answer, so ranking (cover density) decides, not an AND. Facts and skills are
#: few per user; episodes use the IDF-weighted query below.
_OR_QUERY = (
    "(SELECT array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(tsvector_to_array("
    "to_tsvector(%(config)s::regconfig, %(text)s))) AS l), ' | ')::tsquery AS q) AS t"
)


#: How one query finds its nearest episodes: exact distances over the user's rows, or the HNSW index.
VectorScan = Literal["exact", "hnsw"]
VECTOR_SCANS: tuple[VectorScan, ...] = get_args(VectorScan)


def choose_scan(strategy: VectorIndex, episodes: int, *, hnsw_min_episodes: int, index_ready: bool) -> VectorScan:
    """``auto``: exact below ``hnsw_min_episodes`` episodes of the user (a scan of a few
    thousand rows through ``episodes_owner`` is faster than the index and exact), HNSW above
    once the index is built (``ensure_vector_index``), exact until then."""
    if strategy == "auto":
        return "hnsw" if episodes >= hnsw_min_episodes and index_ready else "exact"
    return strategy


_COUNT_SQL = (
    "SELECT coalesce(sum(episodes), 0) AS episodes, coalesce(sum(episodic_tokens)"
    " FILTER (WHERE %(project_id)s::text IS NULL OR project_id IN (%(project_id)s, '')), 0) AS episodic_tokens,"
    " (SELECT generation FROM memory_generations"
    "   WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s) AS generation"
    " FROM episode_counts WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s"
)


@dataclass(frozen=True)
class OwnerTotals:
    #: Live (not archived) episodes of the user the reader may see, every project.
    episodes: int
    #: Tokens of the user's live episodic turns in the project (and of no project).
    episodic_tokens: int
    #: Moves whenever anything a read of the user returns may have changed (migration 0014):
    #: what a cached answer is valid for. None: the user has no number (erased, or nothing
    #: written since the migration), and no answer of theirs is cached.
    generation: int | None = None


async def send_owner_totals(conn: psycopg.AsyncConnection[Any], filters: Filters) -> psycopg.AsyncCursor[Any]:
    """The running totals of the user's episodes (one index lookup, not a count of rows) and
    the user's memory generation, sent, to be read with ``read_owner_totals``: on a connection
    in pipeline mode it travels with whatever the caller reads first."""
    return await conn.cursor().execute(_COUNT_SQL, filters.params())


async def read_owner_totals(cur: psycopg.AsyncCursor[Any]) -> OwnerTotals:
    row = await cur.fetchone()
    return OwnerTotals(int(row[0]), int(row[1]), None if row[2] is None else int(row[2])) if row else OwnerTotals(0, 0)


def _distance(strategy: VectorScan, dim: int) -> sql.Composable:
    if not 0 < dim <= 16_000:
        raise ValueError(f"implausible vector dimension {dim}")
    if strategy == "hnsw":  # must match the partial expression index (vector_index.py)
        return sql.SQL("embedding::vector({dim}) <=> %(embedding)s::vector({dim})").format(dim=sql.Literal(dim))
    return sql.SQL("embedding <=> %(embedding)s")


#: The best rows of a ranking subquery ``m`` (its ``row_at``, a ctid) joined back for their
#: columns: the ranking sorts narrow rows and reads the columns of the winners only. Ranked by
#: a sort, a statement computes its whole select list for every row it sorts: for the exact
#: scan of a user's 1,000 episodes that was 1,000 embeddings sent (``vector_send``) and 1,000
#: wide rows in the sort for 50 kept, half the statement (2.6 against 1.4 ms). By ctid, each
#: winner is one heap fetch (a TID scan); joined by the primary key it was an index descent
#: each, 8 µs a row. One statement, one snapshot: a ctid it ranked still holds the row it saw.
_JOIN_BACK = "JOIN episodes ON episodes.ctid = m.row_at"


#: Statements are composed once per shape and kept as text: psycopg then converts (and,
#: once used often enough, prepares) each of them once, not on every query.
@functools.lru_cache(maxsize=64)
def _vector_sql(strategy: VectorScan, dim: int, model: str | None = None) -> str:
    """The episodes nearest the query (facts' and skills' lists: ``_small_sql``). The HNSW
    index yields rows in order (no sort, only the rows kept are read); the exact scan ranks
    the user's rows first and reads the columns of the nearest only (``_JOIN_BACK``).

    The HNSW statement names ``model`` as a literal, not a parameter: the index is partial
    (``WHERE embedding_model = <model>``, vector_index.py), and a generic plan, which Postgres
    may choose for a prepared statement after its fifth run, can use a partial index only when
    the statement itself implies the index's predicate. With the model as a parameter the
    generic plan read every row of the user through ``episodes_owner`` and sorted them (2 s a
    search at 100,000 episodes instead of 3 ms): a connection whose first five HNSW searches
    looked expensive to the planner (narrow filters) chose it, and kept it."""
    if strategy == "hnsw":
        if model is None:
            raise ValueError("the HNSW statement names its model (the partial index's predicate)")
        statement = (
            "SELECT {cols}, {d} AS distance FROM episodes WHERE {where} AND embedding_model = {model}"
            " ORDER BY {d} LIMIT %(limit)s"
        )
    else:
        statement = (
            "SELECT {cols}, m.distance FROM (SELECT ctid AS row_at, {d} AS distance FROM episodes WHERE {where}"
            " AND embedding_model = %(model)s ORDER BY distance LIMIT %(limit)s) AS m {join} ORDER BY m.distance"
        )
    return (
        sql.SQL(statement)
        .format(
            cols=sql.SQL(_EPISODE_COLUMNS),
            d=_distance(strategy, dim),
            where=sql.SQL(_EPISODE_WHERE),
            # Its "%" doubled: psycopg reads every "%" of a statement with parameters, quoted or not.
            model=sql.SQL(sql.Literal(model).as_string(None).replace("%", "%%")),
            join=sql.SQL(_JOIN_BACK),
        )
        .as_string(None)
    )


#: The query's lexemes (stemmed, stopwords dropped), how many live episodes the user has (and
#: how many of them a project filter keeps) and in how many each lexeme occurs: the running
#: totals the reader may see (RLS). No row for a query without a lexeme. It needs only the
#: query's text, so a search sends it in its first round trip, with the user's totals
#: (``send_terms``), and its text query goes with the vector list in the second: two round
#: trips instead of three.
_TERMS_SQL = (
    "SELECT l.lexeme, c.n,"
    " (SELECT coalesce(sum(t.df), 0) FROM episode_terms t"
    "   WHERE t.tenant_id = %(tenant_id)s AND t.user_id = %(user_id)s AND t.lexeme = l.lexeme) AS df,"
    " memstream_owner_tag(%(tenant_id)s, %(user_id)s) AS owner_tag, c.in_project"
    " FROM unnest(tsvector_to_array(to_tsvector(%(config)s::regconfig, %(text)s))) AS l(lexeme),"
    " (SELECT coalesce(sum(episodes), 0) AS n,"
    "   coalesce(sum(episodes) FILTER (WHERE %(project_id)s::text IS NULL OR project_id IN (%(project_id)s, '')), 0)"
    "   AS in_project FROM episode_counts WHERE tenant_id = %(tenant_id)s AND user_id = %(user_id)s) AS c"
)


@dataclass(frozen=True)
class Terms:
    """What an episodes' text query is built from (``_TERMS_SQL``): in how many of the user's
    live episodes each of the query's lexemes occurs, how many there are, and the user's owner
    tag (migration 0012). Empty for a query without a lexeme."""

    df: dict[str, int]
    n_docs: int = 0
    owner_tag: str = ""
    #: Of ``n_docs``, the episodes of the filter's project and of no project (all without one).
    in_project: int = 0


async def send_terms(
    conn: psycopg.AsyncConnection[Any], filters: Filters, text: str, *, config: str = "english"
) -> psycopg.AsyncCursor[Any]:
    """``_TERMS_SQL`` sent, to be read with ``read_terms`` (in pipeline mode it travels with
    whatever the caller reads first)."""
    params = {"tenant_id": filters.tenant_id, "user_id": filters.user_id, "project_id": filters.project_id,
              "config": config, "text": text}  # fmt: skip
    return await conn.cursor(binary=True).execute(_TERMS_SQL, params)


async def read_terms(cur: psycopg.AsyncCursor[Any]) -> Terms:
    rows = await cur.fetchall()
    if not rows:
        return Terms({})
    return Terms({str(r[0]): int(r[2]) for r in rows}, int(rows[0][1]), str(rows[0][3]), int(rows[0][4]))


#: What the episodes' text queries are planned with, for the rest of the transaction: the
#: planner's scans back on after an HNSW search (``_HNSW_ON``), and custom plans (a generic
#: plan cannot see how selective its filter's words are). ``candidate_lists_many`` sends it
#: after every other statement and before the text queries, so nothing else is planned anew:
#: a context's second sub-query once planned its facts-and-skills statement on every query
#: (1.2 ms instead of 0.2-0.4).
_PLAN_TEXT = (
    "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_seqscan', 'on', true),"
    " set_config('enable_bitmapscan', 'on', true), set_config('enable_sort', 'on', true)"
)


#: Episodes holding any selective lexeme, scored by BM25 with a term frequency of one (turns
#: are short): the IDF of the lexemes each holds, times BM25's length normalisation against
#: the candidates' mean length (``BM25_K1``, ``BM25_B``). Only the best ``%(limit)s`` have their
#: columns read (``_JOIN_BACK``: by primary key, that was 0.65 ms of a 1.1 ms query at a million
#: rows). No more than ``%(scan)s`` matches are scored: the selective lexemes fit in that
#: budget by their counts, but the two rarest words of a query whose words are all common
#: (``TermWeights.all_of``) may be held together by thousands of templated turns, and each
#: match costs a heap visit and a score. (Cover density, ``ts_rank_cd``, used to break ties
#: among the best 200: 25 µs a row, 5 ms of a 12 ms query at 100k episodes.)
_EPISODE_TEXT_SQL = (
    "SELECT {cols}, m.text_rank FROM ("
    "SELECT row_at, created_at AS at, ({score}) * (%(k1)s::float8 + 1) / (1 + %(k1)s::float8"
    " * (1 - %(b)s::float8 + %(b)s::float8 * length(tsv) / greatest(avg(length(tsv)) OVER (), 1))) AS text_rank"
    " FROM (SELECT ctid AS row_at, created_at, tsv FROM episodes WHERE {where}"
    " AND owner_tsv @@ %(filter)s::tsquery LIMIT %(scan)s) AS s"
    " ORDER BY text_rank DESC, created_at DESC LIMIT %(limit)s) AS m {join} ORDER BY m.text_rank DESC, m.at DESC"
)
BM25_K1 = 1.2
BM25_B = 0.75


async def text_match_indexable(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether ``tsvector @@ tsquery`` is leakproof in this database: only then may a query
    under row-level security find its full-text candidates through the GIN index (otherwise
    it reads every row of the user). ``memstream up`` declares it so; a database brought by
    the operator needs a superuser to (SECURITY.md)."""
    cur = await conn.execute("SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq'::regproc")
    row = await cur.fetchone()
    return bool(row and row[0])


#: How many episodes the selective lexemes may pull in together (what a query reads and scores).
SELECTED_ROWS = 2_000
#: How many episodes holding both of the two rarest words (``TermWeights.all_of``) are scored.
ALL_OF_ROWS = 500
#: A lexeme in this share of the user's episodes or more (a speaker's name, "deploy" in a
#: deployment log) does not select candidates: it would pull in a large part of the memory...
COMMON_SHARE = 0.05


def common_df(n_docs: int) -> float:
    """...nor one in √N episodes or more, whichever is larger: in a small memory a share is a
    handful of turns (5 % of 20 is one), and a project's name in 3 of 20 turns must still
    find them; √N grows slower than N, so from about 400 episodes on the share decides."""
    return max(COMMON_SHARE * n_docs, math.sqrt(n_docs))


@dataclass(frozen=True)
class TermWeights:
    """The query's lexemes with their IDF, and which ones select candidates."""

    idf: dict[str, float]
    selective: list[str]
    #: Candidates must hold every selective lexeme (not any): no single one is rare enough.
    all_of: bool = False
    #: How many episodes the selective lexemes pull in together (their document frequencies'
    #: sum; under ``all_of``, at most the rarest's).
    pulled: int = 0

    def tsquery(self, owner_tag: str | None = None, *, project_id: str | None = None) -> str:
        """The selective lexemes as a tsquery; with ``owner_tag``, as the owner's lexemes
        (``episodes.owner_tsv``, migration 0012: postings of one user), and with ``project_id``
        too, in that project or in none (``project_lexemes``, migration 0016)."""
        prefix = f"{owner_tag}:" if owner_tag else ""
        words = (" & " if self.all_of else " | ").join(tsquery_term(prefix + t) for t in self.selective)
        if not (owner_tag and project_id is not None):
            return words
        in_project, in_none = project_lexemes(owner_tag, project_id)
        return f"({words}) & ({tsquery_term(in_project)} | {tsquery_term(in_none)})"


def project_lexemes(owner_tag: str, project_id: str) -> tuple[str, str]:
    """The lexemes of ``owner_tsv`` (migration 0016) naming an episode of the owner in
    ``project_id`` and one of no project. They hold a space, which no word's lexeme does."""
    return f"{owner_tag}: project {project_id}", f"{owner_tag}: no project"


def term_weights(n_docs: int, df: dict[str, int], *, budget: int = SELECTED_ROWS) -> TermWeights:
    """IDF (BM25's, ``ln(1 + (N - df + 0.5) / (df + 0.5))``) per lexeme. The lexemes below
    ``common_df`` select candidates, rarest first, as many as fit together in ``budget``
    episodes; the others only add to a score. When not even the rarest fits (or every word
    is common), the candidates are the episodes holding both of the two rarest words (an
    agent asking about its own name: the name alone), no more than ``ALL_OF_ROWS`` of them
    (``SELECTED_ROWS`` for a lone word): a large memory never scores more than that for one
    query."""
    idf = {t: math.log(1 + (n_docs - min(d, n_docs) + 0.5) / (d + 0.5)) for t, d in df.items()}
    present = sorted((t for t in df if df[t] > 0), key=lambda t: (df[t], t))
    cap = common_df(n_docs)
    selective: list[str] = []
    pulled = 0
    for term in (t for t in present if df[t] < cap):
        if pulled + df[term] > budget:
            break
        selective.append(term)
        pulled += df[term]
    if selective:
        return TermWeights(idf, sorted(selective), pulled=pulled)
    return TermWeights(idf, sorted(present[:2]), all_of=len(present) > 1, pulled=df[present[0]] if present else 0)


def many_rows(weights: TermWeights) -> bool:
    """Whether the text query may read ``ALL_OF_ROWS`` rows or more: both rarest words held
    together (it reads up to that many), or selective words pulling in that many."""
    return weights.all_of or weights.pulled >= ALL_OF_ROWS


def tsquery_term(lexeme: str) -> str:
    """A lexeme as a tsquery literal, not normalised again (quotes and backslashes escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


#: A project filter keeping this share of the user's episodes or more (the project's and those
#: of no project) is checked on the rows the text index finds, where no index can serve it.
#: Otherwise the planner may intersect the text index's bitmap with ``episodes_owner``'s of the
#: project's rows, and it does so when it underestimates how many episodes hold all of a
#: query's words (it multiplies their shares; words of one phrase go together): at 100,000
#: episodes of one user, half of them in the project or in none, that bitmap was 50,000 rows
#: read, 6.9 ms of a 13.4 ms query to spare at most 500 heap rows their check, and a quarter of
#: a context's text queries did it. A narrow project's bitmap is cheap and skips many rows.
BROAD_PROJECT_SHARE = 0.2


@functools.lru_cache(maxsize=64)
def _episode_text_sql(lexemes: int, broad_project: bool = False) -> str:
    """The episodes' text query for ``lexemes`` lexemes scored row by row (on top of ``base``);
    ``broad_project``: the project filter is not for an index (``BROAD_PROJECT_SHARE``)."""
    where = _episode_where(_IN_PROJECT_UNINDEXED if broad_project else _IN_PROJECT, _OF_USER_UNINDEXED)
    score = sql.SQL(" + ").join(
        [
            sql.SQL("%(base)s::float8"),
            *(
                sql.SQL("CASE WHEN tsv @@ {}::tsquery THEN {}::float8 ELSE 0 END").format(
                    sql.Placeholder(f"t{i}"), sql.Placeholder(f"w{i}")
                )
                for i in range(lexemes)
            ),
        ]
    )
    return (
        sql.SQL(_EPISODE_TEXT_SQL)
        .format(cols=sql.SQL(_EPISODE_COLUMNS), score=score, where=sql.SQL(where), join=sql.SQL(_JOIN_BACK))
        .as_string(None)
    )


def _episode_text(params: dict[str, Any], terms: Terms) -> dict[str, Any] | None:
    """The parameters of the episodes' text query (``_episode_text_sql`` of as many lexemes
    as ``t0``, ``t1``, ...), or None when nothing selects candidates."""
    df, owner_tag = terms.df, terms.owner_tag
    weights = term_weights(terms.n_docs, df)
    if terms.n_docs == 0 or not weights.selective:
        return None
    # Each row is scored only on the lexemes that can tell candidates apart: one no episode
    # holds adds nothing, and under ``all_of`` every candidate holds the selective ones (their
    # IDF is a constant ``base``). Scoring costs per row and lexeme: at 100k episodes, 3,000
    # candidates and ten lexemes, it was half the query.
    constant = set(weights.selective) if weights.all_of else set()
    scored = [t for t in sorted(df) if df[t] > 0 and t not in constant]
    return {
        **params,
        "base": sum(weights.idf[t] for t in constant),
        **{f"t{i}": tsquery_term(t) for i, t in enumerate(scored)},
        **{f"w{i}": weights.idf[t] for i, t in enumerate(scored)},
        "lexemes": len(scored),
        "broad_project": params.get("project_id") is not None
        and terms.in_project >= BROAD_PROJECT_SHARE * terms.n_docs,
        # With a project filter the scan read about one row elsewhere for each it kept; the
        # project's lexeme (migration 0016) has the index return only rows the filter keeps
        # (a context's ``all_of`` text query 3.35 -> 2.73 ms). Walking the project's long
        # postings costs the index about 0.1 ms, more than a handful of rows cost the heap, so
        # only a query that may read many rows asks for it (``many_rows``).
        "filter": weights.tsquery(owner_tag, project_id=params.get("project_id") if many_rows(weights) else None),
        "k1": BM25_K1,
        "b": BM25_B,
        "scan": ALL_OF_ROWS if weights.all_of else SELECTED_ROWS,
    }


#: Facts and skills are few per user: both lists of both kinds are one statement (a round of
#: the pipeline costs each side a statement's overhead, even for an empty table). Each row
#: says which kind and list it belongs to; the columns are the union of the two kinds'.
_FACT_AS_SMALL = (
    "fact_id AS id, 'fact' AS memory_type, entity || ': ' || summary AS content, valid_from AS created_at,"
    " importance, ARRAY[category] AS tags, vector_send(embedding), session_id, project_id, agent_id, scope, entity,"
    " NULL::jsonb AS steps, NULL::bigint AS attempts, NULL::bigint AS successes, NULL::text AS last_feedback,"
    " expires_at"
)
_SKILL_AS_SMALL = (
    "skill_id AS id, 'skill' AS memory_type, name AS content, coalesce(last_used_at, created_at) AS created_at,"
    " NULL::real AS importance, NULL::text[] AS tags, vector_send(embedding), NULL::text AS session_id,"
    " NULL::text AS project_id, NULL::text AS agent_id, NULL::text AS scope, name AS entity, steps, attempts,"
    " successes, last_feedback, NULL::timestamptz AS expires_at"
)
_SKILL_TSV = "to_tsvector(%(config)s::regconfig, name || ' ' || description)"
_SMALL_BRANCHES: dict[tuple[Kind, str], str] = {
    ("fact", "vector"): "SELECT 'fact' AS kind, 'vector' AS list, {fact}, embedding <=> %(embedding)s AS distance,"
    " NULL::real AS text_rank FROM visible_facts WHERE embedding_model = %(model)s ORDER BY distance LIMIT %(limit)s",
    ("fact", "text"): "SELECT 'fact', 'text', {fact}, NULL::float8, ts_rank_cd(tsv, t.q) AS text_rank"
    " FROM visible_facts, {q} WHERE tsv @@ t.q ORDER BY text_rank DESC LIMIT %(limit)s",
    ("skill", "vector"): "SELECT 'skill', 'vector', {skill}, embedding <=> %(embedding)s AS distance, NULL::real"
    " FROM visible_skills WHERE embedding_model = %(model)s ORDER BY distance LIMIT %(limit)s",
    ("skill", "text"): "SELECT 'skill', 'text', {skill}, NULL::float8, ts_rank_cd({skill_tsv}, t.q) AS text_rank"
    " FROM visible_skills, {q} WHERE {skill_tsv} @@ t.q ORDER BY text_rank DESC LIMIT %(limit)s",
}


@functools.lru_cache(maxsize=16)
def _small_sql(kinds: tuple[Kind, ...], lists: tuple[str, ...]) -> str:
    """Facts' and skills' lists (``kinds`` among fact, skill; ``lists`` among vector, text) as
    one statement. Each kind's rows the caller may see are named once, for both its lists
    (``NOT MATERIALIZED``: each list is planned as if written out, through its indexes)."""
    parts = {"fact": sql.SQL(_FACT_AS_SMALL), "skill": sql.SQL(_SKILL_AS_SMALL), "q": sql.SQL(_OR_QUERY),
             "skill_tsv": sql.SQL(_SKILL_TSV)}  # fmt: skip
    visible = {
        "fact": sql.SQL("visible_facts AS NOT MATERIALIZED (SELECT * FROM facts WHERE {})").format(
            sql.SQL(_FACT_WHERE)
        ),
        "skill": sql.SQL("visible_skills AS NOT MATERIALIZED (SELECT * FROM {} WHERE {})").format(
            sql.SQL(VISIBLE_SKILLS), sql.SQL(_SKILL_WHERE)
        ),
    }
    statement = sql.SQL("WITH {} {}").format(
        sql.SQL(", ").join(visible[kind] for kind in kinds),
        sql.SQL(" UNION ALL ").join(
            sql.SQL("(" + _SMALL_BRANCHES[kind, name] + ")").format(**parts) for kind in kinds for name in lists
        ),
    )
    return _compact(statement.as_string(None))


def _compact(statement: str) -> str:
    """``statement`` with every run of blanks outside quoted literals one space: psycopg keeps
    its parse of a statement's placeholders only for statements of up to 4,096 characters
    (``MAX_CACHED_STATEMENT_LENGTH``), and the filters' indentation takes some over."""
    parts = re.split(r"('(?:[^']|'')*')", statement)
    return "".join(part if i % 2 else re.sub(r"\s+", " ", part) for i, part in enumerate(parts)).strip()


def _kinds(filters: Filters) -> list[Kind]:
    kinds: list[Kind] = []
    if any(t in EPISODE_TYPES for t in filters.memory_types):
        kinds.append("episode")
    if "fact" in filters.memory_types:
        kinds.append("fact")
    if "skill" in filters.memory_types and not filters.tags:
        kinds.append("skill")
    return kinds


def embeddings(candidates: Sequence[Candidate]) -> npt.NDArray[np.float32] | None:
    """The candidates' embeddings as one matrix, row for row; None when their sizes differ
    (rows of different models). ``vector_send``'s format: the dimension and a spare field
    (two bytes each), then the floats, all big-endian."""
    raw = [c.embedding for c in candidates]
    size = len(raw[0]) if raw else 4
    if any(len(r) != size for r in raw) or size % 4:
        return None
    floats = np.frombuffer(b"".join(raw), dtype=">f4").reshape(len(raw), size // 4)
    return floats[:, 1:].astype(np.float32)


@functools.lru_cache(maxsize=4096)  # importances repeat: a handful of values per tenant
def _real(value: float) -> float:
    """A ``real`` column read in binary as the text protocol prints it (0.9, not 0.8999999761581421)."""
    return float(str(np.float32(value)))


def _episode(row: tuple[Any, ...], *, distance: float | None = None, text_rank: float | None = None) -> Candidate:
    """An episode from a row of ``_EPISODE_COLUMNS`` (positional: rows are read as tuples)."""
    (id_, memory_type, content, created_at, importance, tags, embedding, session_id, project_id, agent_id,
     role, expires_at) = row[:12]  # fmt: skip
    return Candidate(
        "episode", id_, memory_type, content, created_at, _real(importance), list(tags or ()), embedding,
        session_id=session_id, project_id=project_id, agent_id=agent_id, role=role, distance=distance,
        text_rank=text_rank, expires_at=expires_at,
    )  # fmt: skip


def _small(row: tuple[Any, ...]) -> tuple[str, Candidate]:
    """A fact or a skill from a row of ``_small_sql``, with the list it came in."""
    (kind, list_, id_, memory_type, content, created_at, importance, tags, embedding, session_id, project_id,
     agent_id, scope, entity, steps, attempts, successes, last_feedback, expires_at, distance,
     text_rank) = row  # fmt: skip
    if kind == "skill":
        # Shown: the record as it is; ranked (the candidate's importance, for the boost): smoothed.
        rate = smoothed_success_rate(successes, attempts)
        content = (
            f"Skill {entity} (success rate {success_phrase(successes, attempts)}): "
            f"{'; '.join(str(s) for s in steps) or 'no steps recorded'}"
        )
        if last_feedback:
            content += f". Last feedback: {last_feedback}"
        candidate = Candidate(
            "skill", id_, "skill", content, created_at, rate, [], embedding, distance=distance,
            text_rank=text_rank, entity=entity,
        )  # fmt: skip
    else:
        candidate = Candidate(
            "fact", id_, memory_type, content, created_at, _real(importance), list(tags or ()), embedding,
            session_id=session_id, project_id=project_id, agent_id=agent_id, scope=scope, entity=entity,
            distance=distance, text_rank=text_rank, expires_at=expires_at,
        )  # fmt: skip
    return list_, candidate


#: Candidates the HNSW scan keeps in its list (pgvector's ``hnsw.ef_search``): at least the
#: limit, or fewer than ``limit`` rows come back.
def _ef_search(limit: int) -> int:
    return min(1_000, max(100, 2 * limit))


#: What the HNSW lists run under: iterative scans, ``ef_search``, the planner's other scans off
#: (it cannot see that one user holds most of the rows it filters on), and the generic plan.
#: Planned anew on every run, the HNSW statement cost 0.32 ms at each Bind, a fifth of its
#: run (1.7 ms at 100,000 episodes); its generic plan walks the same index (``_vector_sql``),
#: and its Bind takes 0.04 ms.
_HNSW_ON = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %(ef)s, true),"
    " set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),"
    " set_config('enable_sort', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)"
)
_HNSW_OFF = (
    "SELECT set_config('enable_seqscan', 'on', true), set_config('enable_bitmapscan', 'on', true),"
    " set_config('enable_sort', 'on', true), set_config('plan_cache_mode', 'auto', true)"
)


@dataclass(frozen=True)
class Probe:
    """One (sub-)query of ``candidate_lists_many``: its embedding and its text; ``None`` for
    either skips its list. ``terms``: the text's ``read_terms``, when the caller read them
    already (in the same transaction); None: ``candidate_lists_many`` reads them first."""

    embedding: npt.NDArray[np.float32] | None
    text: str | None
    terms: Terms | None = None


def _dim(probe: Probe) -> int:
    assert probe.embedding is not None
    return int(probe.embedding.shape[0])


@dataclass
class _Lists:
    """One probe's statements in flight (``candidate_lists_many``)."""

    probe: Probe
    params: dict[str, Any]
    lists: tuple[str, ...]
    near: psycopg.AsyncCursor[Any]
    small: psycopg.AsyncCursor[Any]
    terms: psycopg.AsyncCursor[Any]
    text_query: dict[str, Any] | None = None
    #: What came back: the vector list (every kind) and each kind's text list.
    by_vector: list[Candidate] = field(default_factory=list)
    by_kind: dict[str, list[Candidate]] = field(default_factory=dict)


async def _send_text(job: _Lists) -> None:
    """The probe's episodes' text query, on its ``terms`` cursor (the terms were read)."""
    query = job.text_query
    assert query is not None
    await job.terms.execute(_episode_text_sql(query.pop("lexemes"), query.pop("broad_project")), query)


def _batch(conn: psycopg.AsyncConnection[Any]) -> AbstractAsyncContextManager[Any]:
    """Statements sent together and their results read in one round trip: in a pipeline of
    their own, or, on a connection in pipeline mode already, in the caller's, read with a
    flush. Not a pipeline nested in the caller's: its end is a Sync, which would end a read
    without BEGIN (``sinks.postgres.tenancy.read_transaction``) and its tenant's settings."""
    return nullcontext() if conn.pgconn.pipeline_status else conn.pipeline()


async def candidate_lists(
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    *,
    embedding: npt.NDArray[np.float32] | None,
    text: str | None,
    model: str,
    limit: int,
    scan: VectorScan,
    config: str = "english",
) -> tuple[list[Candidate], list[Candidate]]:
    """The vector list and the full-text list of one query (``candidate_lists_many``)."""
    (found,) = await candidate_lists_many(
        conn, filters, [Probe(embedding, text)], model=model, limit=limit, scan=scan, config=config
    )
    return found


async def candidate_lists_many(
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    probes: Sequence[Probe],
    *,
    model: str,
    limit: int,
    scan: VectorScan,
    config: str = "english",
) -> list[tuple[list[Candidate], list[Candidate]]]:
    """For each probe, the vector list (nearest first, every requested kind in one embedding
    space) and the full-text list (best first within each kind, kinds interleaved by rank).

    One round trip when every probe with a text comes with its ``terms``, however many probes
    (a decomposed question's sub-queries): each probe's facts' and skills' lists in one
    statement, its nearest episodes, then the text queries' planning (``_PLAN_TEXT``) and
    its episodes' text query. A probe without its terms has them read in that round trip and
    its text query sent in a second.

    ``hnsw``: the episodes come from the HNSW index with iterative scans (the filters and
    row-level security apply while it walks). The planner cannot see that one user holds
    most of the rows it filters on, so the index is asked for explicitly; should the scan
    still return fewer than ``limit`` rows (a filter few rows pass), the exact scan answers.
    Facts and skills are few per user: always exact."""
    kinds = _kinds(filters)
    small = tuple(k for k in kinds if k != "episode")
    episodes = "episode" in kinds
    hnsw = scan == "hnsw"
    base = {**filters.params(), "limit": limit, "model": model, "config": config}
    jobs = []
    for p in probes:
        given = (("vector", p.embedding is not None), ("text", p.text is not None))
        lists = tuple(name for name, wanted in given if wanted)
        cursors = (conn.cursor(binary=True), conn.cursor(binary=True), conn.cursor(binary=True))
        job = _Lists(p, {**base, "embedding": p.embedding, "text": p.text}, lists, *cursors)
        job.by_kind = {kind: [] for kind in kinds}
        if episodes and p.text is not None and p.terms is not None:
            job.text_query = _episode_text(job.params, p.terms)
        jobs.append(job)
    near = [j for j in jobs if episodes and j.probe.embedding is not None]
    unknown = [j for j in jobs if episodes and j.probe.text is not None and j.probe.terms is None]
    ready = [j for j in jobs if j.text_query is not None]
    planned = False
    async with _batch(conn):
        for job in jobs:  # first: planned as usual
            if small and job.lists:
                await job.small.execute(_small_sql(small, job.lists), job.params)
        if hnsw and near:
            await conn.execute(_HNSW_ON, {"ef": str(_ef_search(limit))})
        for job in near:
            await job.near.execute(_vector_sql(scan, _dim(job.probe), model), job.params)
        for job in unknown:
            await job.terms.execute(_TERMS_SQL, job.params)
        # The planner's scans back on for the rest of the transaction (an error aborts it:
        # nothing else runs), and the text queries' custom plans.
        if ready or (hnsw and near and unknown):
            await conn.execute(_PLAN_TEXT)
            planned = True
        elif hnsw and near:
            await conn.execute(_HNSW_OFF)
        for job in ready:
            await _send_text(job)
    for job in near:
        rows = await job.near.fetchall()
        if len(rows) < limit and hnsw:
            await job.near.execute(_vector_sql("exact", _dim(job.probe)), job.params)
            rows = await job.near.fetchall()
        job.by_vector.extend(_episode(row, distance=row[12]) for row in rows)
    for job in jobs:
        if small and job.lists:
            for list_, candidate in map(_small, await job.small.fetchall()):
                (job.by_vector if list_ == "vector" else job.by_kind[candidate.kind]).append(candidate)
    for job in ready:
        job.by_kind["episode"] = [_episode(row, text_rank=row[12]) for row in await job.terms.fetchall()]
    later = []
    for job in unknown:
        job.text_query = _episode_text(job.params, await read_terms(job.terms))
        if job.text_query is not None:
            later.append(job)
    if later:
        async with _batch(conn):  # the second round trip, the text queries of the probes above
            if not planned:
                await conn.execute(_PLAN_TEXT)
            for job in later:
                await _send_text(job)
        for job in later:
            job.by_kind["episode"] = [_episode(row, text_rank=row[12]) for row in await job.terms.fetchall()]
    found = []
    for job in jobs:
        vector_list = sorted(job.by_vector, key=lambda c: c.distance if c.distance is not None else 2.0)
        # Scores of different kinds are not comparable: interleave them rank by rank.
        text_list = [c for rank in zip_longest(*job.by_kind.values()) for c in rank if c is not None]
        found.append((vector_list[:limit], text_list[:limit]))
    return found


async def vector_candidates(
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    embedding: npt.NDArray[np.float32],
    *,
    model: str,
    limit: int,
    scan: VectorScan,
) -> list[Candidate]:
    """The vector list alone (``candidate_lists``)."""
    by_vector, _ = await candidate_lists(
        conn, filters, embedding=embedding, text=None, model=model, limit=limit, scan=scan
    )
    return by_vector


async def text_candidates(
    conn: psycopg.AsyncConnection[Any], filters: Filters, text: str, *, limit: int, config: str = "english"
) -> list[Candidate]:
    """The full-text list alone (``candidate_lists``)."""
    _, by_text = await candidate_lists(
        conn, filters, embedding=None, text=text, model="", limit=limit, scan="exact", config=config
    )
    return by_text
