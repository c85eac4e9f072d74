"""``search_archived_memory``: on-demand search of long-term memory as an ADK tool."""

from __future__ import annotations

from typing import Any

from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from memstream_client import AsyncMemstream
from memstream_client.adk.guardrail import MEMORY_READER
from memstream_client.errors import MemstreamError


def archival_search_tool(client: AsyncMemstream, *, default_project: str | None = None) -> FunctionTool:
    """The ``search_archived_memory(query, project_id=None, limit=3)`` tool of an ADK agent,
    searching the current user's memory (the guardrail pre-approves it: it only reads)."""

    async def search_archived_memory(
        query: str, tool_context: ToolContext, project_id: str | None = None, limit: int = 3
    ) -> dict[str, Any]:
        """Searches past decisions, notes and discussions in the user's long-term memory (older
        than what the conversation shows). Use it when asked about something from earlier
        sessions. Returns the best matches with their time."""
        session = tool_context.session
        try:
            found = await client.search(
                session.user_id, query, project_id=project_id or default_project, k=max(1, min(int(limit), 20))
            )
        except MemstreamError as exc:
            return {"status": "error", "error": f"memory search failed: {exc}"}
        return {
            "status": "success",
            "memories": [
                {"content": hit.content, "time": hit.created_at.isoformat(), "kind": hit.memory_type, "id": str(hit.id)}
                for hit in found.hits
            ],
        }

    setattr(search_archived_memory, MEMORY_READER, True)  # the guardrail pre-approves this function, not its name
    return FunctionTool(search_archived_memory)
