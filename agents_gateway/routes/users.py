"""Lawful erasure of a user's memory, and the renewed consent that lets them be remembered again."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import ConsentOut, ErasureOut
from agents_gateway.retrieval.service import forget_searches
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import Gateway
from schemas.turns import MAX_IDENTIFIER
from sinks.postgres.erasure import erase_user, record_consent
from sinks.postgres.tenancy import tenant_transaction

router = APIRouter(tags=["users"], responses=AUTH_ERRORS)


@router.post(
    "/v1/users/{user_id:path}/erase",
    response_model=ErasureOut,
    summary="Erase a user from every table, vector and buffer, for good",
)
async def erase(
    state: Gateway,
    user_id: Annotated[str, Path(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))],
) -> ErasureOut:
    """Records a tombstone, deletes the user's episodes, facts, graph edges, skills and their
    outcomes and event-log rows, then the user's Redis buffers. From then on nothing of this
    user is stored — not the erased events, whatever time they claim, and no new event — until
    ``POST /v1/users/{user_id}/consent`` records renewed consent. The audit log records that an
    erasure happened, not what it erased."""
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        erasure = await erase_user(conn, user_id)
    buffers = await state.buffers.forget(principal.tenant_id, user_id)
    forget_searches(state, principal.tenant_id, user_id=user_id)
    return ErasureOut(
        erasure_id=erasure.erasure_id, erased_at=erasure.erased_at, episodes=erasure.episodes,
        events=erasure.events, sessions=len(erasure.sessions), buffers=buffers,
    )  # fmt: skip


@router.post(
    "/v1/users/{user_id:path}/consent",
    response_model=ConsentOut,
    summary="Record a user's renewed consent after an erasure: new turns are remembered again",
)
async def consent(
    state: Gateway,
    user_id: Annotated[str, Path(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))],
) -> ConsentOut:
    """Turns memstream receives after this moment are stored again, whatever ``event_time``
    they carry; a turn received before it (still in flight behind a lagging worker, dated
    however far ahead), what the erasure removed and any turn sent again with an erased event
    id stay forgotten. Audited."""
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        given = await record_consent(conn, user_id)
    return ConsentOut(consent_id=given.consent_id, consented_at=given.consented_at, after_erasure=given.after_erasure)
