"""Reads of long-term memory: facts (now or at a past moment) and their history, the graph,
the best skill for a task; and tool outcomes in."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, Depends, Path, Query

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, ApiError
from agents_gateway.models import (
    ErrorOut,
    FactOut,
    FactsOut,
    NeighborOut,
    NeighborsOut,
    SkillOut,
    SkillsOut,
    ToolEventIn,
    TurnsAccepted,
)
from agents_gateway.routes.search import IsoTime
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.routes.turns import publish_records, refuse_identifiers
from agents_gateway.state import Gateway
from memstream.extraction.types import normalise_entity
from schemas.turns import MAX_IDENTIFIER, problems
from sinks.postgres.queries.facts import entity_history, facts_as_of
from sinks.postgres.queries.graph import MAX_DEPTH, neighbors
from sinks.postgres.queries.skills import best_skills
from sinks.postgres.tenancy import tenant_transaction

router = APIRouter(tags=["memory"], responses=AUTH_ERRORS)


@router.get("/v1/entities", response_model=FactsOut, summary="A user's facts, current or as of a moment")
async def get_entities(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    user_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    scope: Annotated[Literal["global", "project", "session"] | None, Query()] = None,
    project_id: Annotated[str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)] = None,
    session_id: Annotated[str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)] = None,
    at: Annotated[datetime | None, IsoTime, Query(description="ISO 8601: the facts valid then")] = None,
    every: Annotated[
        bool,
        Query(
            alias="all",
            description="Also every project's and every session's facts (those not named by project_id "
            "and session_id), as the explorer lists them; by default only those that apply.",
        ),
    ] = False,
) -> FactsOut:
    """The facts that apply (docs/memory-and-retrieval.md): the user's global facts, plus the
    project's with ``project_id`` and the session's with ``session_id``; ``all=true`` adds every
    other project's and session's."""
    if at is not None and at.tzinfo is None:
        raise ApiError(422, "invalid_request", "at must include a timezone")
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=principal.agent_id) as conn:
        rows = await facts_as_of(
            conn, user_id=user_id, at=at, scope=scope, project_id=project_id, session_id=session_id, every=every
        )
    return FactsOut(user_id=user_id, at=at, facts=[FactOut(**r.__dict__) for r in rows])


@router.get(
    "/v1/entities/{name:path}/history", response_model=FactsOut, summary="Every version of a fact, oldest first"
)
async def get_history(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    name: Annotated[str, Path(min_length=1, max_length=200)],
    user_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
) -> FactsOut:
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=principal.agent_id) as conn:
        rows = await entity_history(conn, user_id=user_id, entity=normalise_entity(name))
    return FactsOut(user_id=user_id, at=None, facts=[FactOut(**r.__dict__) for r in rows])


@router.get("/v1/graph/neighbors", response_model=NeighborsOut, summary="Entities within N hops")
async def get_neighbors(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    entity: Annotated[str, Query(min_length=1, max_length=200)],
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = 1,
    direction: Annotated[Literal["out", "in", "both"], Query()] = "out",
    user_id: Annotated[
        str | None,
        Query(
            pattern=ID_PATTERN,
            max_length=MAX_IDENTIFIER,
            description="The user whose graph to walk; required with a key bound to an agent. Without it (a"
            " tenant-level key), the walk spans every user of the tenant.",
        ),
    ] = None,
) -> NeighborsOut:
    """Every other read of memory is one user's; a tenant-level key may also walk the graph of the
    whole tenant. A key bound to an agent acts for that agent in one user's conversations, so it
    names the user (422 otherwise), as for ``/v1/search`` and ``/v1/entities``."""
    if user_id is None and principal.agent_id is not None:
        raise ApiError(
            422, "invalid_request",
            f"user_id is required: this key acts for agent {principal.agent_id} and reads one user's graph at a"
            " time (only a tenant-level key walks every user's)",
            details=[{"loc": ["query", "user_id"], "msg": "required with a key bound to an agent", "type": "missing"}],
        )  # fmt: skip
    start = normalise_entity(entity)
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=principal.agent_id) as conn:
        found = await neighbors(conn, start, depth=depth, direction=direction, user_id=user_id)
    return NeighborsOut(
        entity=start, depth=depth, direction=direction,
        neighbors=[NeighborOut(entity=n.entity, depth=n.depth, path=n.path) for n in found],
    )  # fmt: skip


@router.get(
    "/v1/skills/best", response_model=SkillsOut, summary="A user's skills for a task, by similarity and success"
)
async def get_best_skills(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    user_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    task: Annotated[str, Query(min_length=1, max_length=500)],
    k: Annotated[int, Query(ge=1, le=50)] = 5,
) -> SkillsOut:
    """Counts, steps and feedback come from the outcomes this key may see (an agent's key: its
    own and shared ones)."""
    embedding = (await state.embedder.for_tenant(principal.tenant_id).embed([task]))[0]
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=principal.agent_id) as conn:
        found = await best_skills(conn, embedding, user_id=user_id, model=state.embedder.model_name, limit=k)
    return SkillsOut(task=task, skills=[SkillOut(**s.__dict__) for s in found])


@router.post(
    "/v1/tool-events",
    status_code=202,
    response_model=TurnsAccepted,
    responses={409: {"model": ErrorOut, "description": "The event id already names another turn"}},
    summary="Report a tool outcome",
)
async def post_tool_event(
    state: Gateway, body: ToolEventIn, principal: Annotated[Principal, Depends(scoped("ingest"))]
) -> TurnsAccepted:
    """Published as a ``tool`` turn (it is part of the conversation and the event log); the
    long-term memory worker counts it for the skill and keeps a failure's feedback as a lesson."""
    agent = principal.check_agent(body.agent_id)
    if agent is None:
        raise ApiError(422, "invalid_request", "agent_id is required (this key is not bound to an agent)")
    event_id = body.event_id or uuid.uuid4()
    content = f"{body.skill}: {body.status}" + (f" - {body.feedback}" if body.feedback else "")
    metadata = {"skill": body.skill, "feedback": body.feedback or "", "steps": _json_list(body.steps)}
    record = {
        "event_id": str(event_id), "tenant_id": principal.tenant_id, "agent_id": agent, "user_id": body.user_id,
        "project_id": body.project_id, "session_id": body.session_id, "role": "tool", "content": content,
        "event_time": body.event_time.astimezone(UTC) if body.event_time else datetime.now(UTC),
        "tool_name": body.tool_name or body.skill, "tool_status": body.status, "tags": ["tool-outcome"],
        "metadata": {k: v for k, v in metadata.items() if v}, "shared": body.shared,
    }  # fmt: skip
    found = problems(record, max_content_chars=state.settings.max_content_chars, now=datetime.now(UTC))
    if found:
        raise ApiError(422, "invalid_request", "; ".join(found))
    ids = {"agent_id": agent, "user_id": body.user_id, "project_id": body.project_id, "session_id": body.session_id}
    policy = await refuse_identifiers(state, principal.tenant_id, ids)  # ids are refused, never rewritten
    await publish_records(state, principal, [record], policy=policy, code="invalid_request", loc=lambda _: ["body"])
    return TurnsAccepted(accepted=1, event_ids=[event_id])


def _json_list(items: list[str]) -> str:
    return orjson.dumps(items).decode() if items else ""
