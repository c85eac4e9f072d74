"""``client.sessions``: a session's live buffer."""

from __future__ import annotations

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.sessions import SessionBuffer
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("GET", "/v1/sessions/{session_id}/buffer", response=SessionBuffer)
def session_buffer(session_id: str, *, user_id: str, tenant_id: str | None = None) -> RequestParts:
    """A user's recent turns in the session, oldest first, with the rolling summary of older
    ones (an agent-bound key sees its own and shared turns)."""
    return RequestParts(
        path_params={"session_id": session_id}, query=query_params(user_id=user_id, tenant_id=tenant_id)
    )


class Sessions(SyncResource):
    buffer = SyncMethod(session_buffer)


class AsyncSessions(AsyncResource):
    buffer = AsyncMethod(session_buffer)
