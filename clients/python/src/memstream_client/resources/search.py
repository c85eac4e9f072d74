"""``client.search(...)``: hybrid search of memory (vector and full text, fused, with decay,
boosts and MMR), with filters and the parts of every score."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.retrieval import SearchResult
from memstream_client.types import Decompose, FactScope, MemoryType


@endpoint("GET", "/v1/search", response=SearchResult, renamed={"query": "q"})
def search_memory(
    user_id: str,
    query: str,
    *,
    project_id: str | None = None,
    session_id: str | None = None,
    k: int | None = None,
    memory_types: Sequence[MemoryType] | None = None,
    scopes: Sequence[FactScope] | None = None,
    tags: Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    decay: bool | None = None,
    boosts: bool | None = None,
    mmr: bool | None = None,
    decompose: Decompose | None = None,
    tenant_id: str | None = None,
) -> RequestParts:
    """The ``k`` (gateway default 10) memories of ``user_id`` best matching ``query``.

    ``project_id``: that project's memory and memory of no project; ``session_id``: also that
    session's facts. ``memory_types`` (episodic, procedural, summary, fact, skill), ``scopes``
    (facts: global, project, session) and ``tags`` (any of them) take lists. ``since`` and
    ``until`` need a timezone. ``decay``, ``boosts`` and ``mmr`` switch ranking steps (all on by
    default); ``decompose`` splits the query (off by default). None leaves a filter out."""
    return RequestParts(
        query=query_params(
            q=query,
            user_id=user_id,
            project_id=project_id,
            session_id=session_id,
            k=k,
            memory_types=memory_types,
            scopes=scopes,
            tags=tags,
            since=since,
            until=until,
            decay=decay,
            boosts=boosts,
            mmr=mmr,
            decompose=decompose,
            tenant_id=tenant_id,
        )
    )
