"""Forgetting one memory: an episode or a fact, by the id a search hit carries."""

from __future__ import annotations

import uuid
from typing import Annotated

import psycopg
from fastapi import APIRouter, Depends

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, RETRY_AFTER_S, ApiError
from agents_gateway.models import ErrorOut, ForgottenOut
from agents_gateway.retrieval.service import forget_searches
from agents_gateway.state import Gateway
from sinks.postgres.forgetting import NotOwnedError, forget_memory
from sinks.postgres.tenancy import tenant_transaction
from sinks.redis.buffer import SessionRef, TurnForgotten

router = APIRouter(tags=["memories"], responses=AUTH_ERRORS)


@router.delete(
    "/v1/memories/{memory_id}",
    response_model=ForgottenOut,
    responses={
        403: {"model": ErrorOut, "description": "Missing scope, or another agent's (shared) memory named"},
        404: {"model": ErrorOut, "description": "No memory of this id that this key may see"},
    },
    summary="Forget one memory (an episode or a fact) for good",
)
async def forget(
    state: Gateway,
    memory_id: uuid.UUID,
    principal: Annotated[Principal, Depends(scoped("admin", agent_scope="ingest"))],
) -> ForgottenOut:
    """``memory_id`` is the ``id`` of a ``/v1/search`` hit: an episode's event id (a turn, a
    lesson, a daily summary) or a fact's id. A tenant-level key needs ``admin``; a key bound to
    an agent forgets its own agent's memories with ``ingest`` (another agent's shared memory:
    403; anything it cannot see — another agent's private memory, another tenant's, no such
    id — 404, alike).

    The memory is deleted and tombstoned, so that no redelivery and no ``memstream replay``
    stores it again; a turn also leaves its session buffer. A fact's earlier version takes its
    place, as if the forgotten one had never been stated. What was derived from an episode
    (facts, a lesson) stays: those are memories of their own, forgotten by their own ids. Asking
    again answers 200 with ``repeated`` set. Audited (``memory.delete``)."""
    async with tenant_transaction(
        state.pool, principal.tenant_id, agent_id=principal.agent_id, actor=principal.key_id
    ) as conn:
        try:
            forgotten = await forget_memory(
                conn, principal.tenant_id, memory_id, agent_id=principal.agent_id, actor=principal.key_id
            )
        except NotOwnedError as exc:
            raise ApiError(
                403, "wrong_agent", f"{exc}: a key bound to agent {principal.agent_id} forgets only its own memories"
            ) from None
        except psycopg.errors.LockNotAvailable as exc:
            raise ApiError(
                503, "memory_busy", "the user's memory is being written or rebuilt; retry (nothing was forgotten)",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            ) from exc  # fmt: skip
        buffered = TurnForgotten(removed=0, summary_dropped=False)
        if forgotten is not None and forgotten.turn is not None:
            # Before the commit, with the user's lock held: the buffer stage (which holds it shared
            # while it appends) cannot put the turn back, and a Redis failure rolls the forgetting
            # back (503), to be asked again.
            turn = forgotten.turn
            ref = SessionRef(principal.tenant_id, turn.user_id, turn.session_id)
            buffered = await state.buffers.forget_turn(ref, str(memory_id), turn.event_time)
    if forgotten is None:
        raise ApiError(404, "not_found", "no memory with this id is visible to this key")
    forget_searches(state, principal.tenant_id, memory_id=memory_id)
    return ForgottenOut(
        kind=forgotten.kind, id=forgotten.memory_id, memory_type=forgotten.memory_type,
        forgotten_at=forgotten.forgotten_at, repeated=forgotten.repeated, buffer_turns=buffered.removed,
        summary_dropped=buffered.summary_dropped, restored_fact_id=forgotten.restored_fact_id,
    )  # fmt: skip
