"""ADK events as memstream turns: who said what, with ids that make saving twice harmless.

An ADK event becomes one turn per thing it carries: its text (the user's message or the
agent's answer), each function call and each function response (``tool`` turns with the
tool's name and, for a response, its status). A turn's ``event_id`` is a UUIDv5 of the app,
user, session, the ADK event's id and the part's position, so the same session saved again
publishes the same ids, and memstream stores each turn once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event

#: The namespace of turn ids made from ADK events (a UUIDv5 of ``memstream-adk``).
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://memstream.dev/adk/events")
#: Characters of a message kept in a turn (the gateway's default limit for a turn's content).
MAX_TEXT = 32_000
#: Characters of a tool call's arguments or a tool's response kept in a turn.
MAX_TOOL_TEXT = 4000
#: Statuses in a tool's response that mean it did not do its job.
FAILED = frozenset({"error", "denied", "failure", "failed", "blocked", "pending"})


@dataclass(frozen=True)
class Scope:
    """Where turns of an ADK app land in memstream."""

    agent_id: str
    project_id: str | None


def turn_id(app_name: str, user_id: str, session_id: str, event_id: str, part: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, "\x1f".join((app_name, user_id, session_id, event_id, str(part))))


def event_turns(
    events: Iterable[Event], *, app_name: str, user_id: str, session_id: str, scope: Scope
) -> list[dict[str, Any]]:
    """The turns of ``events``, in order (partial streaming events and empty ones are skipped)."""
    turns: list[dict[str, Any]] = []
    for event in events:
        if event.partial or event.content is None or not event.content.parts:
            continue
        when = datetime.fromtimestamp(event.timestamp, UTC).isoformat()
        common = {
            "agent_id": scope.agent_id,
            "user_id": user_id,
            "session_id": session_id,
            "project_id": scope.project_id,
            "event_time": when,
            "metadata": {"adk_event_id": event.id[:128], "adk_author": event.author[:128]},
        }
        common = {k: v for k, v in common.items() if v is not None}
        text = "".join(part.text for part in event.content.parts if part.text and not part.thought).strip()
        found: list[dict[str, Any]] = []
        if len(text) > MAX_TEXT:
            text = text[: MAX_TEXT - 1] + "…"
        if text:
            found.append({"role": "user" if event.author == "user" else "assistant", "content": text})
        for part in event.content.parts:
            call = part.function_call
            if call is not None and call.name:
                name: str = call.name
                found.append(
                    {
                        "role": "tool",
                        "tool_name": name[:128],
                        "tool_status": "pending",
                        "content": f"call {name}({_clip(call.args or {})})",
                    }
                )
            answer = part.function_response
            if answer is not None and answer.name:
                name = answer.name
                response = answer.response or {}
                found.append(
                    {
                        "role": "tool",
                        "tool_name": name[:128],
                        "tool_status": "failure" if _failed(response) else "success",
                        "content": f"{name} returned {_clip(response)}",
                    }
                )
        for i, turn in enumerate(found):
            turn_uuid = turn_id(app_name, user_id, session_id, event.id, i)
            turns.append({**common, **turn, "event_id": str(turn_uuid)})
    return turns


def _failed(response: dict[str, Any]) -> bool:
    status = response.get("status")
    return "error" in response or (isinstance(status, str) and status.lower() in FAILED)


def _clip(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= MAX_TOOL_TEXT else text[: MAX_TOOL_TEXT - 1] + "…"
