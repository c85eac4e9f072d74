"""Hybrid retrieval over every kind of memory, as one ranked list.

For each (sub-)query: vector and full-text candidates of every kind (episodes, facts,
skills), fused with reciprocal-rank fusion (per-tenant weights), then decay and boosts.
Sub-queries' lists are merged with each one's scores scaled to its own best (so every topic
of a compound question is represented), and maximal marginal relevance picks the final k
without near-duplicates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import psycopg

from agents_gateway.retrieval.fusion import fuse_rrf
from agents_gateway.retrieval.ranking import RankingOptions, Scored, adjust, mmr
from memstream.embedder import Embedder
from sinks.postgres.queries.retrieval import (
    Candidate,
    Filters,
    Probe,
    Terms,
    VectorScan,
    candidate_lists_many,
    embeddings,
)


@dataclass(frozen=True)
class SearchSpec:
    filters: Filters
    queries: Sequence[str]
    k: int
    candidates: int
    vector_weight: float
    text_weight: float
    rrf_k: int
    ranking: RankingOptions
    #: How the vector list is found (``choose_scan``: by the user's size under ``auto``).
    scan: VectorScan
    #: Postgres text-search configuration the tenant's rows are indexed in.
    text_config: str = "english"


@dataclass
class Hit:
    candidate: Candidate
    scored: Scored
    #: Which sub-queries found it (indices into the decomposition).
    sub_queries: list[int] = field(default_factory=list)


#: A candidate's key in fusion and merging: its kind and its id's number. A ``UUID`` hashes in
#: Python (``UUID.__hash__``), and a search hashes its keys some 750 times: a third of fusing
#: one sub-query's lists; its number hashes in C, and is equal exactly when the UUID is.
Key = tuple[str, int]


def _key(c: Candidate) -> Key:
    return (c.kind, c.id.int)


def _scored(
    spec: SearchSpec, by_vector: list[Candidate], by_text: list[Candidate], *, now: datetime
) -> tuple[list[Scored], dict[Key, Candidate]]:
    """One (sub-)query's two lists fused, with decay and boosts (a memory in both lists is
    its full-text row)."""
    vector_keys = [_key(c) for c in by_vector]
    text_keys = [_key(c) for c in by_text]
    candidates: dict[Key, Candidate] = dict(zip(vector_keys, by_vector, strict=True))
    candidates.update(zip(text_keys, by_text, strict=True))
    fused = fuse_rrf([("vector", spec.vector_weight, vector_keys), ("text", spec.text_weight, text_keys)],
                     k=spec.rrf_k)  # fmt: skip
    scored = []
    for f in fused:
        c = candidates[f.key]
        ranks = f.ranks
        scored.append(Scored(
            key=f.key, rrf=f.score, created_at=c.created_at, importance=c.importance, tags=c.tags,
            embedding=None, decays=c.kind == "episode" and c.memory_type != "procedural",
            parts={"vector_rank": ranks.get("vector", 0), "text_rank": ranks.get("text", 0)},
        ))  # fmt: skip
    return adjust(scored, spec.ranking, now), candidates


#: Another connection of the same tenant for a sub-query, if one is free right now (None: no).
SpareConnection = Callable[[], AbstractAsyncContextManager[psycopg.AsyncConnection[Any] | None]]


async def hybrid_search(
    conn: psycopg.AsyncConnection[Any],
    spec: SearchSpec,
    embedder: Embedder,
    *,
    now: datetime,
    spare: SpareConnection | None = None,
    terms: Sequence[Terms] | None = None,
) -> list[Hit]:
    """The top ``spec.k`` memories for the (sub-)queries (the caller set the tenant).

    With ``spare``, sub-queries run side by side on the connections it can lend at once (a
    context question is about two): Postgres answers them on as many cores, so a compound
    question costs about one sub-query's time when the machine is not busy. When the pool has
    nothing idle they all go on ``conn``, as without it, in the same round trips
    (``candidate_lists_many``). ``terms``: each sub-query's, read already in this transaction
    (``send_early``): then each lane takes one round trip."""
    queries = await embedder.embed(list(spec.queries))
    jobs = list(zip(spec.queries, queries, strict=True))
    results: list[tuple[list[Scored], dict[Key, Candidate]] | None] = [None] * len(jobs)

    async def lane(lane_conn: psycopg.AsyncConnection[Any], indices: range) -> None:
        """The lane's sub-queries, together: two round trips for all of them."""
        found = await candidate_lists_many(
            lane_conn, spec.filters, [Probe(jobs[i][1], jobs[i][0], terms[i] if terms else None) for i in indices],
            model=embedder.model_name,
            limit=spec.candidates, scan=spec.scan, config=spec.text_config,
        )  # fmt: skip
        for i, (by_vector, by_text) in zip(indices, found, strict=True):
            results[i] = _scored(spec, by_vector, by_text, now=now)

    async with AsyncExitStack() as lent:
        conns = [conn]
        while spare is not None and len(conns) < len(jobs):
            extra = await lent.enter_async_context(spare())
            if extra is None:
                break
            conns.append(extra)
        if len(conns) == 1:
            await lane(conn, range(len(jobs)))
        else:
            try:
                async with asyncio.TaskGroup() as lanes:  # one fails: the others are cancelled
                    for first, lane_conn in enumerate(conns):
                        lanes.create_task(lane(lane_conn, range(first, len(jobs), len(conns))))
            except ExceptionGroup as failed:  # the first failure, as a single lane would raise it
                raise failed.exceptions[0]  # noqa: B904
    merged: dict[Key, Hit] = {}
    for index, result in enumerate(results):
        assert result is not None
        scored, candidates = result
        best = scored[0].score if scored else 1.0
        for item in scored:
            if len(spec.queries) > 1 and best:  # each sub-query's best counts the same
                item.rrf /= best
            key = cast(Key, item.key)
            hit = merged.get(key)
            if hit is None or item.score > hit.scored.score:
                hit = Hit(candidates[key], item, hit.sub_queries if hit else [])
                merged[key] = hit
            hit.sub_queries.append(index)
    ranked = sorted(merged.values(), key=lambda h: -h.scored.score)
    vectors = embeddings([h.candidate for h in ranked]) if spec.ranking.mmr and ranked else None
    picked = mmr([h.scored for h in ranked], spec.k, spec.ranking, vectors)
    by_scored = {id(h.scored): h for h in ranked}
    return [by_scored[id(s)] for s in picked]
