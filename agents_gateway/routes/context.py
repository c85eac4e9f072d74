"""``GET /v1/context``: what an agent needs before its next turn, within a token budget."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import ContextOut
from agents_gateway.retrieval.service import build_context
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import Gateway
from schemas.turns import MAX_IDENTIFIER
from sinks.postgres.tenancy import idle_tenant_transaction, tenant_transaction

router = APIRouter(tags=["context"])


@router.get(
    "/v1/context",
    response_model=ContextOut,
    responses=AUTH_ERRORS,
    summary="Long-term facts, the rolling summary, recent turns and relevant memories, packed to a budget",
)
async def get_context(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    user_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    session_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    project_id: Annotated[str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)] = None,
    query: Annotated[str | None, Query(max_length=2000, description="The user's next message, or a question")] = None,
    budget: Annotated[int, Query(ge=64, le=200_000, description="Tokens the context may use")] = 2000,
    decompose: Literal["off", "rules", "llm"] = "rules",
) -> ContextOut:
    """Never waits on an LLM unless ``decompose=llm`` is asked for (and a Gemini key is set)."""
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=principal.agent_id,
                                  actor=principal.key_id, pipeline=True) as conn:  # fmt: skip
        return await build_context(
            state, conn, tenant_id=principal.tenant_id, agent_id=principal.agent_id, user_id=user_id,
            session_id=session_id, project_id=project_id, query=query or None, budget=budget, method=decompose,
            spare=partial(idle_tenant_transaction, state.pool, principal.tenant_id, agent_id=principal.agent_id,
                          actor=principal.key_id, pipeline=True),
        )  # fmt: skip
