"""The gateway's endpoints, grouped as the clients expose them, and the table of which SDK
method covers which gateway operation (checked against the gateway's OpenAPI document by
``tests/test_client_schema.py``)."""

from __future__ import annotations

from typing import Any

from memstream_client.endpoint import Endpoint
from memstream_client.resources import (
    audit,
    context,
    entities,
    graph,
    keys,
    memories,
    permissions,
    search,
    sessions,
    skills,
    tenant,
    tool_events,
    turns,
    users,
)

#: Every SDK method (its attribute path on a client) and the endpoint it calls.
ENDPOINTS: dict[str, Endpoint[Any, Any]] = {
    "whoami": keys.whoami,
    "turns.publish": turns.publish_turns,
    "sessions.buffer": sessions.session_buffer,
    "search": search.search_memory,
    "context.get": context.get_context,
    "entities.list": entities.list_facts,
    "entities.history": entities.fact_history,
    "graph.neighbors": graph.neighbors,
    "skills.best": skills.best_skills,
    "skills.list": skills.list_skills,
    "memories.list": memories.list_memories,
    "memories.delete": memories.delete_memory,
    "tool_events.record": tool_events.record_tool_event,
    "permissions.evaluate": permissions.evaluate,
    "permissions.allow_once": permissions.allow_once,
    "rules.create": permissions.create_rule,
    "rules.list": permissions.list_rules,
    "rules.delete": permissions.delete_rule,
    "users.list": users.list_users,
    "users.erase": users.erase_user,
    "users.consent": users.record_consent,
    "audit.list": audit.list_audit,
    "tenant.privacy.get": tenant.get_privacy,
    "tenant.privacy.set": tenant.set_privacy,
    "tenant.retention.get": tenant.get_retention,
    "tenant.retention.set": tenant.set_retention,
    "tenant.retention.preview": tenant.preview_retention,
    "tenant.ranking.get": tenant.get_ranking,
    "tenant.ranking.set": tenant.set_ranking,
    "tenant.text_search.get": tenant.get_text_search,
    "tenant.text_search.set": tenant.set_text_search,
}

#: Gateway operations the SDK leaves out: probes for orchestrators and Prometheus, not agents.
EXCLUDED: frozenset[tuple[str, str]] = frozenset(
    {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/readyz/workers"), ("GET", "/metrics")}
)
