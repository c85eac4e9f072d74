"""``GET /v1/search``: hybrid retrieval over every kind of memory (vector + full text, RRF,
decay, boosts, MMR), with filters and the parts of every score."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BeforeValidator

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, ApiError
from agents_gateway.models import SearchOut
from agents_gateway.retrieval.service import Toggles, decomposition_out, search, to_hit
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import Gateway
from schemas.turns import MAX_IDENTIFIER
from sinks.postgres.queries.retrieval import MEMORY_TYPES, Filters
from sinks.postgres.tenancy import idle_tenant_transaction, tenant_transaction

router = APIRouter(tags=["search"])


SCOPES = ("global", "project", "session")


def csv_of(words: tuple[str, ...]) -> str:
    """The pattern of a comma-separated list of ``words`` (blanks around them and empty items
    allowed, as ``csv`` reads it)."""
    item = "[ \\t]*(?:" + "|".join(words) + ")?[ \\t]*"
    return f"^{item}(?:,{item})*$"


def csv(value: str | None, allowed: tuple[str, ...] | None, name: str) -> tuple[str, ...] | None:
    """A comma-separated list; empty (or absent) is no filter."""
    items = tuple(dict.fromkeys(v.strip() for v in (value or "").split(",") if v.strip()))
    if not items:
        return None
    if allowed is not None and not set(items) <= set(allowed):
        raise ApiError(422, "invalid_request", f"{name} must be a comma-separated list of {', '.join(allowed or ())}")
    return items


def iso_time(value: object) -> object:
    """A time is ISO 8601: pydantic would read a number (``0.5``) as seconds since 1970."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return value
        raise ValueError("must be an ISO 8601 time with a timezone (e.g. 2026-11-30T09:00:00Z), not a number")
    return value


#: A time in a query: ISO 8601 (a timezone is checked by ``aware``), never a number.
IsoTime = BeforeValidator(iso_time)


def aware(value: datetime | None, name: str) -> datetime | None:
    if value is not None and value.tzinfo is None:
        raise ApiError(422, "invalid_request", f"{name} must include a timezone")
    return value


@router.get("/v1/search", response_model=SearchOut, responses=AUTH_ERRORS, summary="Hybrid search of memory")
async def search_memory(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    q: Annotated[str, Query(min_length=1, max_length=2000, description="What to look for")],
    user_id: Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)],
    project_id: Annotated[
        str | None,
        Query(
            pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="That project's memory and memory of no project"
        ),
    ] = None,
    session_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="Includes its session facts")
    ] = None,
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    memory_types: Annotated[
        str | None, Query(description=f"Comma-separated: {', '.join(MEMORY_TYPES)}", pattern=csv_of(MEMORY_TYPES))
    ] = None,
    scopes: Annotated[
        str | None, Query(description="Facts only: global, project, session", pattern=csv_of(SCOPES))
    ] = None,
    tags: Annotated[str | None, Query(description="Any of these tags (a fact's category counts as a tag)")] = None,
    since: Annotated[datetime | None, IsoTime, Query(description="ISO 8601 with a timezone")] = None,
    until: Annotated[datetime | None, IsoTime, Query(description="ISO 8601 with a timezone")] = None,
    decay: bool = True,
    boosts: bool = True,
    mmr: bool = True,
    decompose: Literal["off", "rules", "llm"] = "off",
    tenant_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="Optional: the key's tenant")
    ] = None,
) -> SearchOut:
    filters = Filters(
        tenant_id=principal.check_tenant(tenant_id), user_id=user_id, project_id=project_id, session_id=session_id,
        memory_types=csv(memory_types, MEMORY_TYPES, "memory_types") or MEMORY_TYPES,
        scopes=csv(scopes, SCOPES, "scopes"),
        tags=csv(tags, None, "tags") or (), since=aware(since, "since"), until=aware(until, "until"),
    )  # fmt: skip
    async with tenant_transaction(state.pool, filters.tenant_id, agent_id=principal.agent_id,
                                  actor=principal.key_id, pipeline=True) as conn:  # fmt: skip
        hits, decomposition, scan = await search(
            state,
            conn,
            filters,
            q,
            k=k,
            method=decompose,
            toggles=Toggles(decay=decay, boosts=boosts, mmr=mmr),
            agent_id=principal.agent_id,
            spare=partial(idle_tenant_transaction, state.pool, filters.tenant_id, agent_id=principal.agent_id,
                          actor=principal.key_id, pipeline=True),
        )  # fmt: skip
    return SearchOut(
        query=q, k=k, embedding_model=state.embedder.model_name, decomposition=decomposition_out(decomposition),
        vector_scan=scan, hits=[to_hit(h) for h in hits],
    )  # fmt: skip
