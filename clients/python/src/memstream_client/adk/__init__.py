"""memstream for Google ADK (``pip install 'memstream-client[adk]'``).

- ``MemstreamMemoryService``: an ADK memory service (``Runner(memory_service=...)``,
  ``adk web --memory_service_uri=memstream://host:port`` after ``register()``).
- ``MemstreamPlugin``: ambient context before each turn, recording after it, and the
  permission guardrail on every tool call (``Runner(plugins=[...])``).
- ``archival_search_tool``: the ``search_archived_memory`` tool.
- ``before_tool_callback``: the guardrail as an agent's ``before_tool_callback``.
"""

from memstream_client.adk.events import NAMESPACE, event_turns, turn_id
from memstream_client.adk.guardrail import Guardrail, before_tool_callback, command_of
from memstream_client.adk.memory_service import SCHEME, MemstreamMemoryService, register
from memstream_client.adk.plugin import CONTEXT_END, CONTEXT_START, MemstreamPlugin
from memstream_client.adk.tools import archival_search_tool

__all__ = [
    "CONTEXT_END",
    "CONTEXT_START",
    "NAMESPACE",
    "SCHEME",
    "Guardrail",
    "MemstreamMemoryService",
    "MemstreamPlugin",
    "archival_search_tool",
    "before_tool_callback",
    "command_of",
    "event_turns",
    "register",
    "turn_id",
]
