"""``client.tool_events``: report how a tool call or a whole skill went."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memory import ToolEvent
from memstream_client.models.turns import PublishResult
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("POST", "/v1/tool-events", body=ToolEvent, response=PublishResult, idempotent=True)
def record_tool_event(event: ToolEvent | Mapping[str, Any]) -> RequestParts:
    """Report a tool outcome (a ``ToolEvent`` or a dict of its fields): published as a
    ``tool`` turn, counted for the skill, a failure's feedback kept as a lesson. Without an
    ``event_id`` it gets one before the first attempt, and every retry sends the same."""
    if not isinstance(event, ToolEvent | Mapping):
        raise TypeError(f"record takes a ToolEvent or a dict, not {type(event).__name__}")
    model = event if isinstance(event, ToolEvent) else ToolEvent.model_validate(event)
    if model.event_id is None:
        model = model.model_copy(update={"event_id": uuid.uuid4()})
    return RequestParts(json=model.to_json())


class ToolEvents(SyncResource):
    record = SyncMethod(record_tool_event)


class AsyncToolEvents(AsyncResource):
    record = AsyncMethod(record_tool_event)
