"""``MemstreamMemoryService``: memstream as an ADK memory service.

Sessions and event deltas are published as turns (``events.py``); ``search_memory`` is
memstream's hybrid search; ``delete_memory`` forgets one memory. ADK's ``app_name`` is the
memstream project unless a project is configured (``project_id=``), and the agent that owns
the turns is ``agent_id`` (default: the app's name; a key bound to an agent must match it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from memstream_client import AsyncMemstream
from memstream_client.adk.events import Scope, event_turns
from memstream_client.tags import MEMORY_TAGS, defused

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

#: The URI scheme ``adk web --memory_service_uri=memstream://host:port`` uses.
SCHEME = "memstream"
#: The session that explicit memories (``add_memory``) are published in, when none is given.
MEMORY_SESSION = "adk-memories"


class MemstreamMemoryService(BaseMemoryService):
    """Long-term memory of ADK agents in memstream.

    ``client``: an ``AsyncMemstream`` (default: one from ``MEMSTREAM_BASE_URL`` and
    ``MEMSTREAM_API_KEY``). ``agent_id``: the agent the turns belong to (default: the ADK app's
    name). ``project_id``: the project of every turn and search (default: the app's name; set
    ``app_as_project=False`` for none). ``search_limit``: hits per ``search_memory``.
    """

    def __init__(
        self,
        client: AsyncMemstream | None = None,
        *,
        agent_id: str | None = None,
        project_id: str | None = None,
        app_as_project: bool = True,
        search_limit: int = 10,
        uri: str | None = None,
    ) -> None:
        if client is None:
            base_url = _base_url(uri) if uri else None
            client = AsyncMemstream(base_url=base_url)
        self.client = client
        self.agent_id = agent_id
        self.project_id = project_id
        self.app_as_project = app_as_project
        self.search_limit = search_limit

    @classmethod
    def from_uri(cls, uri: str, **kwargs: Any) -> MemstreamMemoryService:
        """A service for ``memstream://host:port`` (``memstreams://`` for HTTPS); the key from
        ``MEMSTREAM_API_KEY``, the agent and project from ``MEMSTREAM_AGENT_ID`` and
        ``MEMSTREAM_PROJECT_ID`` when set."""
        return cls(
            uri=uri,
            agent_id=os.environ.get("MEMSTREAM_AGENT_ID") or None,
            project_id=os.environ.get("MEMSTREAM_PROJECT_ID") or None,
        )

    def scope(self, app_name: str) -> Scope:
        """Where this app's turns land."""
        project = self.project_id or (app_name if self.app_as_project else None)
        return Scope(agent_id=self.agent_id or app_name, project_id=project)

    async def add_session_to_memory(self, session: Session) -> None:
        """Publish every event of the session (again: each turn is stored once)."""
        await self.add_events_to_memory(
            app_name=session.app_name, user_id=session.user_id, events=session.events, session_id=session.id
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Publish these events (a delta) as turns of ``session_id``; returns once the broker has
        them. Facts are extracted later by memstream's memory worker: nothing here waits for it."""
        turns = event_turns(
            events,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id or MEMORY_SESSION,
            scope=self.scope(app_name),
        )
        for start in range(0, len(turns), 500):  # the gateway takes up to 500 turns a request
            await self.client.turns.publish(turns[start : start + 500])

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Publish explicit memories as turns (the user's when their author is ``user``, else the
        agent's) in the session ``custom_metadata["session_id"]`` (default ``adk-memories``)."""
        scope = self.scope(app_name)
        session = str((custom_metadata or {}).get("session_id") or MEMORY_SESSION)
        turns = []
        for memory in memories:
            text = "".join(part.text or "" for part in memory.content.parts or ()).strip()
            if not text:
                continue
            turn: dict[str, Any] = {
                "agent_id": scope.agent_id,
                "user_id": user_id,
                "session_id": session,
                "project_id": scope.project_id,
                "role": "user" if memory.author == "user" else "assistant",
                "content": text,
                "tags": ["adk-memory"],
            }
            if memory.timestamp:
                turn["event_time"] = memory.timestamp
            turns.append({k: v for k, v in turn.items() if v is not None})
        if turns:
            await self.client.turns.publish(turns)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """memstream's hybrid search over the user's memory in the app's project."""
        found = await self.client.search(
            user_id, query, project_id=self.scope(app_name).project_id, k=self.search_limit
        )
        return SearchMemoryResponse(memories=[_entry(hit) for hit in found.hits])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Forget one memory (the ``id`` of a ``search_memory`` entry): audited, and a replay does
        not bring it back."""
        if not memory_id:
            raise ValueError("delete_memory needs the memory_id of a search_memory entry")
        await self.client.memories.delete(memory_id)

    async def close(self) -> None:
        await self.client.close()


def _entry(hit: Any) -> MemoryEntry:
    """A hit as ADK's memory entry. Its text is defused of the tags that frame memory: ADK's
    ``PreloadMemoryTool`` puts entries between ``<PAST_CONVERSATIONS>`` tags in the system
    instruction, which a stored closing tag would end (``memstream_client.tags``)."""
    role = "user" if hit.role == "user" else "model"
    return MemoryEntry(
        id=str(hit.id),
        content=types.Content(role=role, parts=[types.Part(text=defused(hit.content, MEMORY_TAGS))]),
        author=hit.role or hit.kind,
        timestamp=hit.created_at.isoformat(),
        custom_metadata={"kind": hit.kind, "memory_type": hit.memory_type, "score": hit.score},
    )


def _base_url(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme not in (SCHEME, SCHEME + "s") or not parsed.netloc:
        raise ValueError(f"a memstream memory URI looks like memstream://host:port, not {uri!r}")
    return f"{'https' if parsed.scheme.endswith('s') else 'http'}://{parsed.netloc}{parsed.path.rstrip('/')}"


def register() -> None:
    """Make ``memstream://host:port`` a memory service URI of ADK's CLI (``adk web``,
    ``adk api_server``): call it from the agent directory's ``services.py``."""
    from google.adk.cli.service_registry import get_service_registry

    def factory(uri: str, **_: Any) -> MemstreamMemoryService:
        return MemstreamMemoryService.from_uri(uri)

    registry = get_service_registry()
    registry.register_memory_service(SCHEME, factory)
    registry.register_memory_service(SCHEME + "s", factory)
