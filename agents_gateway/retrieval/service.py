"""The read path as the routes use it: settings per tenant, decomposition, hybrid search,
access statistics, and the context assembly."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg

from agents_gateway.models import ContextOut, ContextSectionOut, DecompositionOut, ScoreParts, SearchHit
from agents_gateway.retrieval.context import item, pack
from agents_gateway.retrieval.decomposition import Decomposition, Method, decompose
from agents_gateway.retrieval.ranking import RankingOptions
from agents_gateway.retrieval.search import Hit, SearchSpec, SpareConnection, hybrid_search
from agents_gateway.state import GatewayState
from memstream.extraction.timewords import names_previous_session
from sinks.postgres.event_log import previous_session
from sinks.postgres.queries.facts import FactRow, facts_as_of
from sinks.postgres.queries.retrieval import (
    EPISODE_TYPES,
    Filters,
    OwnerTotals,
    Terms,
    VectorScan,
    choose_scan,
    read_owner_totals,
    read_terms,
    send_owner_totals,
    send_terms,
)
from sinks.postgres.tenant_settings import TenantSettings
from sinks.redis.buffer import SessionRef

CONTEXT_RELEVANT = 12


@dataclass(frozen=True)
class Toggles:
    decay: bool = True
    boosts: bool = True
    mmr: bool = True


@dataclass(frozen=True)
class EarlyTerms:
    """A search's sub-queries and their terms statements (``send_terms``), sent in its first
    round trip with the user's totals (``send_early``)."""

    decomposition: Decomposition
    sent: list[psycopg.AsyncCursor[Any]]
    #: The time the decomposition read relative time against (the search's).
    now: datetime


def _text_config(state: GatewayState, tenant: TenantSettings) -> str:
    """The text-search configuration the tenant's rows are indexed in (its own, else the deployment's)."""
    return tenant.text_search_config or state.settings.text_search_config


def _family(filters: Filters, agent_id: str | None, query: str, method: Method, toggles: Toggles) -> tuple[Any, ...]:
    """What a search's cache keys have in common, whatever the database and the session buffer
    say (``RecentSearches.holds``)."""
    return (filters, agent_id, query, method, toggles)


async def send_early(
    state: GatewayState,
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    query: str,
    *,
    method: Method,
    toggles: Toggles,
    agent_id: str | None,
    now: datetime,
) -> EarlyTerms | None:
    """The sub-queries' terms statements, sent before the caller reads anything, so that they
    travel in its first round trip and the text queries go with the vector lists in the second
    (a round trip fewer). None, and nothing sent, when the sub-queries are not known without
    a round trip or a model (the LLM's decomposition; "the previous session" to look up in
    the event log), or when the same search has an answer in the cache (``holds``: it is
    likely a repeat, and its terms would be read for nothing)."""
    if method == "llm" or (filters.session_id and names_previous_session(query)):
        return None
    if state.searches.holds(_family(filters, agent_id, query, method, toggles)):
        return None
    decomposition = await decompose(
        query, method=method, session_id=filters.session_id, previous_session_id=None, now=now, llm=None
    )
    tenant = await state.policies.settings(filters.tenant_id, conn)
    sent = [await send_terms(conn, filters, q, config=_text_config(state, tenant)) for q in decomposition.queries]
    return EarlyTerms(decomposition, sent, now)


async def search(
    state: GatewayState,
    conn: psycopg.AsyncConnection[Any],
    filters: Filters,
    query: str,
    *,
    k: int,
    method: Method,
    toggles: Toggles,
    agent_id: str | None,
    now: datetime | None = None,
    totals: OwnerTotals | None = None,
    early: EarlyTerms | None = None,
    spare: SpareConnection | None = None,
) -> tuple[list[Hit], Decomposition, VectorScan]:
    """``totals`` and ``early``: what the caller sent and read in its first round trip (the
    context's); without ``totals`` this does it, ``send_early`` included."""
    now_given = now is not None  # an answer "as of" another time is not a repeat of a current one
    now = now or (early.now if early is not None else datetime.now(UTC))
    settings = state.settings
    if totals is None:
        sent = await send_owner_totals(conn, filters)
        early = await send_early(
            state, conn, filters, query, method=method, toggles=toggles, agent_id=agent_id, now=now
        )
        totals = await read_owner_totals(sent)
    tenant = await state.policies.settings(filters.tenant_id, conn)
    auto = settings.vector_index == "auto"
    scan = choose_scan(
        settings.vector_index,
        totals.episodes if auto else 0,
        hnsw_min_episodes=settings.hnsw_min_episodes,
        index_ready=auto and await state.vector_index.ready(conn),
    )
    earlier = await previous_session(
        conn, tenant_id=filters.tenant_id, user_id=filters.user_id, session_id=filters.session_id, agent_id=agent_id,
    ) if filters.session_id and names_previous_session(query) else None  # fmt: skip
    # Everything the answer depends on (recent.py): the generation was read in this transaction;
    # the previous session comes from the event log, which moves no generation; the date is what
    # "yesterday" means.
    cacheable = not now_given and totals.generation is not None
    key = (filters, agent_id, query, k, method, toggles, tenant.ranking, tenant.text_search_config,
           state.embedder.model_name, scan, totals.generation, earlier, now.date())  # fmt: skip
    if cacheable and (cached := state.searches.get(key)) is not None:
        hits, decomposition = cached
        _note_access(state, filters.tenant_id, hits)
        return list(hits), decomposition, scan
    if early is not None:
        decomposition = early.decomposition
        terms: list[Terms] | None = [await read_terms(cur) for cur in early.sent]
    else:
        decomposition = await decompose(
            query, method=method, session_id=filters.session_id, previous_session_id=earlier, now=now, llm=state.llm
        )
        terms = None
    spec = SearchSpec(
        filters=filters,
        queries=decomposition.queries,
        k=k,
        candidates=max(settings.search_candidates, k),
        vector_weight=tenant.ranking.vector_weight if tenant.ranking.vector_weight is not None
        else settings.rrf_vector_weight,
        text_weight=tenant.ranking.text_weight if tenant.ranking.text_weight is not None else settings.rrf_text_weight,
        rrf_k=settings.rrf_k,
        ranking=RankingOptions(
            decay=toggles.decay, boosts=toggles.boosts, mmr=toggles.mmr,
            half_life_days=tenant.ranking.half_life_days or settings.search_half_life_days,
            decay_floor=settings.search_decay_floor,
        ),
        scan=scan,
        text_config=_text_config(state, tenant),
    )  # fmt: skip
    embedder = state.embedder.for_tenant(filters.tenant_id)  # no other tenant's texts are hits (SECURITY.md)
    hits = await hybrid_search(conn, spec, embedder, now=now, spare=spare, terms=terms)
    _note_access(state, filters.tenant_id, hits)
    if cacheable and state.searches.enabled:
        kept = tuple(Hit(replace(h.candidate, embedding=b""), h.scored, h.sub_queries) for h in hits)  # MMR is done
        state.searches.put(
            key, (kept, decomposition), size=answer_bytes(kept), now=now,
            expiries=[h.candidate.expires_at for h in hits if h.candidate.expires_at is not None],
            family=_family(filters, agent_id, query, method, toggles),
        )  # fmt: skip
    return hits, decomposition, scan


#: A hit's objects without its strings (the candidate, its scores, their containers; measured).
HIT_BYTES = 1_024


def answer_bytes(hits: Sequence[Hit]) -> int:
    """About how much memory a cached answer holds: each hit's objects and every string in it
    (its content and its tags above all: a hit may carry 32 tags of 64 characters)."""
    total = 0
    for hit in hits:
        c = hit.candidate
        strings = (c.content, c.memory_type, c.session_id, c.project_id, c.agent_id, c.role, c.scope, c.entity)
        total += HIT_BYTES + sum(sys.getsizeof(s) for s in strings if s is not None)
        total += sum(sys.getsizeof(t) for t in c.tags)
    return total


def forget_searches(state: GatewayState, tenant_id: str, *, user_id: str | None = None,
                    memory_id: UUID | None = None) -> int:  # fmt: skip
    """Drop this process's cached answers for the user (an erasure) or holding the memory (a
    forgetting). They would never be served again (the generation moved), and now they are not
    held either; other processes drop theirs at their first lookup after those end
    (``RecentSearches._sweep``)."""

    def matches(key: object, value: tuple[tuple[Hit, ...], Decomposition]) -> bool:
        if not (isinstance(key, tuple) and isinstance(key[0], Filters) and key[0].tenant_id == tenant_id):
            return False
        return key[0].user_id == user_id or any(h.candidate.id == memory_id for h in value[0])

    return state.searches.drop_where(matches)


def _note_access(state: GatewayState, tenant_id: str, hits: Sequence[Hit]) -> None:
    state.access.note(
        tenant_id,
        episodes=[h.candidate.id for h in hits if h.candidate.kind == "episode"],
        facts=[h.candidate.id for h in hits if h.candidate.kind == "fact"],
    )


def to_hit(hit: Hit) -> SearchHit:
    c, s = hit.candidate, hit.scored
    return SearchHit(
        kind=c.kind, id=c.id, memory_type=c.memory_type, content=c.content, session_id=c.session_id,
        project_id=c.project_id, agent_id=c.agent_id, role=c.role, scope=c.scope, importance=c.importance,
        tags=list(c.tags), created_at=c.created_at, score=s.ranking_score,
        parts=ScoreParts(vector_rank=int(s.parts.get("vector_rank", 0)) or None,
                         text_rank=int(s.parts.get("text_rank", 0)) or None,
                         rrf=s.rrf, decay=s.decay, boost=s.boost, relevance=s.score, mmr_penalty=s.mmr_penalty),
        sub_queries=sorted(set(hit.sub_queries)),
    )  # fmt: skip


def decomposition_out(decomposition: Decomposition) -> DecompositionOut:
    return DecompositionOut(method=decomposition.method, queries=decomposition.queries)


#: A hit that shares no word with the query needs this share of the best hit's cosine.
SIMILARITY_SHARE = 0.7


def relevant_only(hits: Sequence[Hit], *, relative: float, min_similarity: float | None) -> list[Hit]:
    """The hits worth a prompt's tokens: the nearest memories always exist, relevant or not,
    so ranking alone would fill the budget with small talk. A hit stays when its score is at
    least ``relative`` of the best one's and, unless it shares a word with the query (found
    by full text), when its cosine to the query reaches both ``min_similarity`` (the
    embedder's "unrelated" line) and ``SIMILARITY_SHARE`` of the best hit's cosine. When
    nothing qualifies the section stays empty and its budget unused."""
    if not hits:
        return []
    best = max(h.scored.score for h in hits)
    similarities = [1.0 - h.candidate.distance for h in hits if h.candidate.distance is not None]
    floor = SIMILARITY_SHARE * max(similarities) if similarities else None
    if min_similarity is not None:
        floor = max(floor, min_similarity) if floor is not None else min_similarity
    kept = []
    for hit in hits:
        if hit.scored.score < relative * best:
            continue
        distance = hit.candidate.distance
        if not hit.scored.parts.get("text_rank") and floor is not None:
            if distance is None or 1.0 - distance < floor:
                continue
        kept.append(hit)
    return kept


def _where(scope: str, project_id: str | None) -> str:
    return f"project {project_id}" if scope == "project" else scope


def _fact_lines(facts: Sequence[FactRow]) -> list[tuple[str, list[UUID]]]:
    """One line per distinct statement, most important first, with the facts it stands for.

    Extraction often states one thing about several entities ("Alice and Bob use Postgres");
    those facts share a line ("- [global] alice, bob: uses Postgres") instead of repeating it.
    """
    groups: dict[tuple[str, str], list[FactRow]] = {}
    for fact in sorted(facts, key=lambda f: (-f.importance, f.scope, f.entity)):
        groups.setdefault((_where(fact.scope, fact.project_id), fact.summary), []).append(fact)
    return [
        (
            item(f"- [{where}] {', '.join(dict.fromkeys(f.entity for f in group))}: {summary}"),
            [f.fact_id for f in group],
        )
        for (where, summary), group in groups.items()
    ]


async def build_context(
    state: GatewayState,
    conn: psycopg.AsyncConnection[Any],
    *,
    tenant_id: str,
    agent_id: str | None,
    user_id: str,
    session_id: str,
    project_id: str | None,
    query: str | None,
    budget: int,
    method: Method,
    spare: SpareConnection | None = None,
) -> ContextOut:
    filters = Filters(tenant_id=tenant_id, user_id=user_id, project_id=project_id, session_id=session_id,
                      memory_types=(*EPISODE_TYPES, "skill"))  # fmt: skip
    # The buffer (Redis) is read while Postgres answers; the totals travel with the facts.
    buffered = asyncio.create_task(state.buffers.view(SessionRef(tenant_id, user_id, session_id)))
    try:
        #: The whole history's tokens (what stuffing it into the prompt would cost) and the user's size.
        sent = await send_owner_totals(conn, filters)
        early = await send_early(state, conn, filters, query, method=method, toggles=Toggles(), agent_id=agent_id,
                                 now=datetime.now(UTC)) if query else None  # fmt: skip
        facts = _fact_lines(await facts_as_of(conn, user_id=user_id, project_id=project_id, session_id=session_id))
        totals = await read_owner_totals(sent)
    except BaseException:
        buffered.cancel()
        raise
    view = await buffered
    raw_recent = [t for t in (*view.pending, *view.window) if agent_id is None or t.get("shared")
                  or t.get("agent_id") == agent_id]  # fmt: skip
    recent_ids = {str(t["event_id"]) for t in raw_recent}
    summary = view.summary.text if view.summary and (agent_id is None or set(view.summary.agents) <= {agent_id}) else ""
    hits: list[Hit] = []
    decomposition = Decomposition("off", [])
    scan: VectorScan | None = None
    if query:
        hits, decomposition, scan = await search(
            state,
            conn,
            filters,
            query,
            k=CONTEXT_RELEVANT + len(recent_ids),
            method=method,
            toggles=Toggles(),
            agent_id=agent_id,
            totals=totals,
            early=early,
            spare=spare,
        )
        floor = state.settings.context_min_similarity
        hits = relevant_only(
            [h for h in hits if str(h.candidate.id) not in recent_ids],
            relative=state.settings.context_relative_floor,
            min_similarity=floor if floor is not None else state.embedder.unrelated_below,
        )[:CONTEXT_RELEVANT]
    where = ", ".join(x for x in (f"project {project_id}" if project_id else "", f"session {session_id}") if x)
    tokens = state.tokens.for_tenant(tenant_id)  # counts remembered for this tenant only (SECURITY.md)
    packed = pack(
        f"# Memory for {user_id} ({where})",
        {
            "facts": [line for line, _ in facts],
            "summary": [item(f"- {summary}")] if summary else [],
            "recent": [item(f"{t['role']}: {t['content']}") for t in reversed(raw_recent)],
            "relevant": [item(f"- [{h.candidate.created_at:%Y-%m-%d}, {h.candidate.memory_type}] {h.candidate.content}")
                         for h in hits],
        },
        budget=budget,
        tokens=tokens,
    )  # fmt: skip
    naive = totals.episodic_tokens + (tokens.count(query) if query else 0)
    fact_ids = [fact_id for i in sorted(packed.sections["facts"].chosen) for fact_id in facts[i][1]]
    state.access.note(tenant_id, facts=fact_ids)
    return ContextOut(
        prompt=packed.prompt, tokens=packed.tokens, budget=budget, tokenizer=state.tokens.name,
        sections=[ContextSectionOut(name=s.name, tokens=s.tokens, items=len(s.chosen), dropped=s.dropped)  # type: ignore[arg-type]
                  for s in packed.sections.values()],
        naive_tokens=naive, saved_tokens=max(0, naive - packed.tokens),
        saved_ratio=round(1 - packed.tokens / naive, 4) if naive > packed.tokens else 0.0,
        decomposition=decomposition_out(decomposition),
        vector_scan=scan,
        facts=fact_ids,
        relevant=[to_hit(hits[i]) for i in sorted(packed.sections["relevant"].chosen)],
    )  # fmt: skip
