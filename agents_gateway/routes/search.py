"""``GET /v1/search``: hybrid retrieval over episodic memory (vector + full text, RRF)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import SearchHit, SearchOut
from agents_gateway.retrieval.fusion import fuse_rrf
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import GatewayState
from sinks.postgres.queries import EpisodeScope, text_candidates, vector_candidates
from sinks.postgres.tenancy import tenant_transaction

router = APIRouter(tags=["search"])


@router.get(
    "/v1/search",
    response_model=SearchOut,
    responses=AUTH_ERRORS,
    summary="Hybrid search of the user's episodic memory",
)
async def search(
    request: Request,
    principal: Annotated[Principal, Depends(scoped("read"))],
    q: Annotated[str, Query(min_length=1, max_length=2000, description="What to look for")],
    user_id: Annotated[str, Query(pattern=ID_PATTERN)],
    project_id: Annotated[
        str | None,
        Query(pattern=ID_PATTERN, description="Also this project's memory (else all of the user's)"),
    ] = None,
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    tenant_id: Annotated[str | None, Query(pattern=ID_PATTERN, description="Optional: the key's tenant")] = None,
) -> SearchOut:
    state: GatewayState = request.app.state.gateway
    settings = state.settings
    tenant = principal.check_tenant(tenant_id)
    scope = EpisodeScope(tenant_id=tenant, user_id=user_id, project_id=project_id)
    embedding = (await state.embedder.embed([q]))[0]
    candidates = max(settings.search_candidates, k)
    async with tenant_transaction(state.pool, tenant, agent_id=principal.agent_id, actor=principal.key_id) as conn:
        by_vector = await vector_candidates(
            conn,
            scope,
            embedding,
            model=state.embedder.model_name,
            limit=candidates,
            strategy=settings.vector_index,
        )
        by_text = await text_candidates(conn, scope, q, limit=candidates)
    rows = {row["event_id"]: row for row in (*by_vector, *by_text)}
    fused = fuse_rrf(
        [
            ("vector", settings.rrf_vector_weight, [r["event_id"] for r in by_vector]),
            ("text", settings.rrf_text_weight, [r["event_id"] for r in by_text]),
        ],
        k=settings.rrf_k,
    )[:k]
    hits = [
        SearchHit(
            event_id=f.key,
            session_id=rows[f.key]["session_id"],
            project_id=rows[f.key]["project_id"],
            agent_id=rows[f.key]["agent_id"],
            role=rows[f.key]["role"],
            content=rows[f.key]["content"],
            memory_type=rows[f.key]["memory_type"],
            importance=rows[f.key]["importance"],
            tags=rows[f.key]["tags"],
            created_at=rows[f.key]["created_at"],
            score=f.score,
            vector_rank=f.ranks.get("vector"),
            text_rank=f.ranks.get("text"),
        )
        for f in fused
    ]
    return SearchOut(query=q, k=k, embedding_model=state.embedder.model_name, hits=hits)
