"""``client.memories``: a user's memories as a timeline, and forgetting one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.memories import ForgottenMemory, Memory, MemoryPage
from memstream_client.pagination import every_item, every_item_async
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.types import EpisodeType


@endpoint("GET", "/v1/memories", response=MemoryPage)
def list_memories(
    user_id: str,
    *,
    session_id: str | None = None,
    project_id: str | None = None,
    memory_type: Sequence[EpisodeType] | None = None,
    include_archived: bool | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    agent_id: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> RequestParts:
    """A page of the user's memories — turns, lessons, daily summaries — newest first, each with
    where it came from (event, Kafka partition and offset, summariser). Archived originals are
    included and marked (``include_archived=False`` leaves them out); forgotten ones never are.
    ``project_id``: exactly that project's; ``memory_type`` takes a list; ``since``/``until``
    need a timezone; ``agent_id``: as that agent sees them. ``limit``: 1-200 (gateway default
    50). Pass the page's ``next_cursor`` as ``cursor`` for the next one."""
    return RequestParts(
        query=query_params(
            user_id=user_id,
            session_id=session_id,
            project_id=project_id,
            memory_type=memory_type,
            include_archived=include_archived,
            since=since,
            until=until,
            agent_id=agent_id,
            limit=limit,
            cursor=cursor,
        )
    )


@endpoint("DELETE", "/v1/memories/{memory_id}", response=ForgottenMemory)
def delete_memory(memory_id: uuid.UUID | str) -> RequestParts:
    """Forget one memory for good: ``memory_id`` is the ``id`` of a search hit (a turn, a
    lesson, a daily summary, or a fact). It is not found, recalled or rebuilt again; a fact's
    earlier version takes its place. A tenant-level key needs ``admin``; a key bound to an agent
    forgets its own agent's memories with ``ingest``. ``NotFoundError`` when the key can see no
    memory of that id; asking again (a retry) answers with ``repeated`` set."""
    return RequestParts(path_params={"memory_id": str(memory_id)})


class Memories(SyncResource):
    list = SyncMethod(list_memories)
    delete = SyncMethod(delete_memory)

    def iter_all(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        project_id: str | None = None,
        memory_type: Sequence[EpisodeType] | None = None,
        include_archived: bool | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        agent_id: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Memory]:
        """Every memory ``list`` finds, newest first, page after page (``limit`` per request)."""
        return every_item(
            lambda cursor: self.list(
                user_id, session_id=session_id, project_id=project_id, memory_type=memory_type,
                include_archived=include_archived, since=since, until=until, agent_id=agent_id, limit=limit,
                cursor=cursor,
            ),
            lambda page: page.memories,
        )  # fmt: skip


class AsyncMemories(AsyncResource):
    list = AsyncMethod(list_memories)
    delete = AsyncMethod(delete_memory)

    def iter_all(
        self,
        user_id: str,
        *,
        session_id: str | None = None,
        project_id: str | None = None,
        memory_type: Sequence[EpisodeType] | None = None,
        include_archived: bool | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        agent_id: str | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[Memory]:
        """Every memory ``list`` finds, newest first, page after page (``async for``)."""
        return every_item_async(
            lambda cursor: self.list(
                user_id, session_id=session_id, project_id=project_id, memory_type=memory_type,
                include_archived=include_archived, since=since, until=until, agent_id=agent_id, limit=limit,
                cursor=cursor,
            ),
            lambda page: page.memories,
        )  # fmt: skip
