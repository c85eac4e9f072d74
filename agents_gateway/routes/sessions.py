"""``GET /v1/sessions/{session_id}/buffer``: a session's recent turns from Redis."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from agents_gateway.models import BufferedTurn, BufferOut, ErrorOut
from agents_gateway.state import GatewayState
from schemas.turns import IDENTIFIER

router = APIRouter(tags=["sessions"])
ID_PATTERN = f"^{IDENTIFIER.pattern}$"


@router.get(
    "/v1/sessions/{session_id}/buffer",
    response_model=BufferOut,
    responses={422: {"model": ErrorOut}, 503: {"model": ErrorOut}},
    summary="The session's recent turns, oldest first",
)
async def get_buffer(
    request: Request,
    session_id: Annotated[str, Path(pattern=ID_PATTERN)],
    tenant_id: Annotated[str, Query(pattern=ID_PATTERN)],
) -> BufferOut:
    state: GatewayState = request.app.state.gateway
    turns = [BufferedTurn.model_validate(t) for t in await state.buffers.read(tenant_id, session_id)]
    return BufferOut(
        tenant_id=tenant_id,
        session_id=session_id,
        turns=turns,
        total_tokens=sum(t.tokens for t in turns),
    )
