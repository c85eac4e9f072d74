"""``POST /v1/users/{user_id}/erase``: lawful erasure of a user's memory."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import ErasureOut
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import GatewayState
from sinks.postgres.erasure import erase_user
from sinks.postgres.tenancy import tenant_transaction

router = APIRouter(tags=["users"], responses=AUTH_ERRORS)


@router.post(
    "/v1/users/{user_id}/erase",
    response_model=ErasureOut,
    summary="Erase a user from every table, vector and buffer, for good",
)
async def erase(
    request: Request,
    user_id: Annotated[str, Path(pattern=ID_PATTERN)],
    principal: Annotated[Principal, Depends(scoped("admin"))],
) -> ErasureOut:
    """Records a tombstone (turns of this user up to now are never stored again, whoever
    re-sends them), deletes the user's episodes and event-log rows, then the Redis buffers
    of their sessions. The audit log records that an erasure happened, not what it erased."""
    state: GatewayState = request.app.state.gateway
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        erasure = await erase_user(conn, user_id)
    buffers = await state.buffers.forget(principal.tenant_id, erasure.sessions)
    return ErasureOut(
        erasure_id=erasure.erasure_id, erased_at=erasure.erased_at, episodes=erasure.episodes,
        events=erasure.events, sessions=len(erasure.sessions), buffers=buffers,
    )  # fmt: skip
