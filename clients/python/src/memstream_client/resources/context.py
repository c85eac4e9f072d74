"""``client.context``: what an agent needs before its next turn, within a token budget."""

from __future__ import annotations

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.retrieval import Context
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.types import Decompose


@endpoint("GET", "/v1/context", response=Context)
def get_context(
    user_id: str,
    query: str | None = None,
    *,
    session_id: str,
    project_id: str | None = None,
    budget: int | None = None,
    decompose: Decompose | None = None,
) -> RequestParts:
    """Long-term facts, the session's rolling summary and recent turns, and the memories
    relevant to ``query`` (the user's next message, or a question), packed into ``budget``
    tokens (gateway default 2000) as a ready prompt. ``decompose``: rules by default; ``llm``
    waits on the gateway's LLM."""
    return RequestParts(
        query=query_params(
            user_id=user_id,
            session_id=session_id,
            project_id=project_id,
            query=query,
            budget=budget,
            decompose=decompose,
        )
    )


class ContextResource(SyncResource):
    get = SyncMethod(get_context)


class AsyncContextResource(AsyncResource):
    get = AsyncMethod(get_context)
