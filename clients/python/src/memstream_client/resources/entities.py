"""``client.entities``: the facts known about a user, and how each changed."""

from __future__ import annotations

from datetime import datetime

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memory import Facts
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.types import FactScope


@endpoint("GET", "/v1/entities", response=Facts)
def list_facts(
    user_id: str,
    *,
    scope: FactScope | None = None,
    project_id: str | None = None,
    session_id: str | None = None,
    at: datetime | None = None,
    all: bool | None = None,
) -> RequestParts:
    """The user's current facts, or those valid ``at`` a past moment (with a timezone): those
    that apply, i.e. the global ones, plus ``project_id``'s and ``session_id``'s; ``all=True``
    adds every other project's and session's."""
    return RequestParts(
        query=query_params(user_id=user_id, scope=scope, project_id=project_id, session_id=session_id, at=at, all=all)
    )


@endpoint("GET", "/v1/entities/{name}/history", response=Facts)
def fact_history(name: str, *, user_id: str) -> RequestParts:
    """Every version of the fact about entity ``name``, oldest first."""
    return RequestParts(path_params={"name": name}, query=query_params(user_id=user_id))


class Entities(SyncResource):
    list = SyncMethod(list_facts)
    history = SyncMethod(fact_history)


class AsyncEntities(AsyncResource):
    list = AsyncMethod(list_facts)
    history = AsyncMethod(fact_history)
