"""``client.turns``: publish conversation turns."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.errors import InvalidArgumentError
from memstream_client.models.turns import PublishResult, Turn, TurnBatch
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource

TurnLike = Turn | Mapping[str, Any]


@endpoint("POST", "/v1/turns", body=TurnBatch, response=PublishResult, idempotent=True)
def publish_turns(turns: TurnLike | Sequence[TurnLike]) -> RequestParts:
    """Publish one turn or a batch (``Turn`` models or dicts of the same fields; the gateway
    takes up to 500 at once). A turn without an ``event_id`` gets one (uuid4) before the first
    attempt and every retry sends the same ids, so each turn is stored once. Returns the
    accepted count and the event ids, in the order of the turns."""
    batch = TurnBatch(turns=[identified(turn) for turn in listed(turns)])
    return RequestParts(json=batch.to_json())


def listed(turns: TurnLike | Sequence[TurnLike]) -> list[Turn]:
    if isinstance(turns, str | bytes):
        raise TypeError("publish takes a turn (a Turn or a dict) or a list of turns, not a string")
    items = [turns] if isinstance(turns, Turn | Mapping) else list(turns)
    if not items:
        raise InvalidArgumentError("publish needs at least one turn")
    return [item if isinstance(item, Turn) else Turn.model_validate(item) for item in items]


def identified(turn: Turn) -> Turn:
    """The turn with an event id (a copy: the caller's model is left as it was)."""
    return turn if turn.event_id is not None else turn.model_copy(update={"event_id": uuid.uuid4()})


class Turns(SyncResource):
    publish = SyncMethod(publish_turns)


class AsyncTurns(AsyncResource):
    publish = AsyncMethod(publish_turns)
