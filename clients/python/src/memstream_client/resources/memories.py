"""``client.memories``: forgetting one memory."""

from __future__ import annotations

import uuid

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memories import ForgottenMemory
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource


@endpoint("DELETE", "/v1/memories/{memory_id}", response=ForgottenMemory)
def delete_memory(memory_id: uuid.UUID | str) -> RequestParts:
    """Forget one memory for good: ``memory_id`` is the ``id`` of a search hit (a turn, a
    lesson, a daily summary, or a fact). It is not found, recalled or rebuilt again; a fact's
    earlier version takes its place. A tenant-level key needs ``admin``; a key bound to an agent
    forgets its own agent's memories with ``ingest``. ``NotFoundError`` when the key can see no
    memory of that id; asking again (a retry) answers with ``repeated`` set."""
    return RequestParts(path_params={"memory_id": str(memory_id)})


class Memories(SyncResource):
    delete = SyncMethod(delete_memory)


class AsyncMemories(AsyncResource):
    delete = AsyncMethod(delete_memory)
