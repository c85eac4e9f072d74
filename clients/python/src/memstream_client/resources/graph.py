"""``client.graph``: the knowledge graph of entities and their relations."""

from __future__ import annotations

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memory import Neighbors
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.types import Direction


@endpoint("GET", "/v1/graph/neighbors", response=Neighbors)
def neighbors(
    entity: str, *, depth: int | None = None, direction: Direction | None = None, user_id: str | None = None
) -> RequestParts:
    """Entities within ``depth`` hops of ``entity`` (gateway default 1, following outgoing
    edges), each with the shortest path found; ``user_id`` limits them to one user's graph (a key
    bound to an agent must name one: without it the walk spans every user of the tenant)."""
    return RequestParts(query=query_params(entity=entity, depth=depth, direction=direction, user_id=user_id))


class Graph(SyncResource):
    neighbors = SyncMethod(neighbors)


class AsyncGraph(AsyncResource):
    neighbors = AsyncMethod(neighbors)
