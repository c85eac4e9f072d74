"""``GET /v1/sessions/{session_id}/buffer?user_id=``: a user's recent turns in a session, from Redis."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import BufferedTurn, BufferOut, RollingSummaryOut
from agents_gateway.state import Gateway
from schemas.turns import IDENTIFIER, MAX_IDENTIFIER
from sinks.redis.buffer import SessionRef

router = APIRouter(tags=["sessions"])
ID_PATTERN = f"^{IDENTIFIER.pattern}$"


@router.get(
    "/v1/sessions/{session_id:path}/buffer",
    response_model=BufferOut,
    responses=AUTH_ERRORS,
    summary="A user's recent turns in the session, oldest first",
)
async def get_buffer(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    session_id: Annotated[str, Path(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    user_id: Annotated[
        str,
        Query(
            pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="Whose turns: a buffer is per user and session"
        ),
    ],
    tenant_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="Optional: the key's tenant")
    ] = None,
) -> BufferOut:
    tenant = principal.check_tenant(tenant_id)
    view = await state.buffers.view(SessionRef(tenant, user_id, session_id))

    def visible(raw: list[dict[str, object]]) -> list[BufferedTurn]:
        turns = [BufferedTurn.model_validate(t) for t in raw]
        if principal.agent_id is not None:  # an agent-bound key: its own turns and shared ones
            turns = [t for t in turns if t.shared or t.agent_id == principal.agent_id]
        return turns

    window = visible(view.window)
    summary = None
    s = view.summary
    if s is not None and (principal.agent_id is None or set(s.agents) <= {principal.agent_id}):
        summary = RollingSummaryOut(
            text=s.text, summarizer=s.summarizer, through=datetime.fromtimestamp(s.through / 1e6, UTC),
            turns=s.turns, calls=s.calls, input_tokens=s.input_tokens, output_tokens=s.output_tokens,
        )  # fmt: skip
    return BufferOut(
        tenant_id=tenant, user_id=user_id, session_id=session_id, summary=summary, pending=visible(view.pending),
        turns=window, total_tokens=sum(t.tokens for t in window),
    )  # fmt: skip
