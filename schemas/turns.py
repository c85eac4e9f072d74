"""What a turn is, once decoded: the record every sink receives, and the rules it must obey.

The gateway applies the same rules before producing, and the worker applies them
again after decoding (agents may produce to Kafka directly), so a record that
breaks them is rejected at the edge with a 4xx or sent to the dead-letter topic.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "tool", "system"]
ToolStatus = Literal["success", "failure", "pending"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")

#: Identifiers (tenant, agent, user, project, session): no spaces, no braces (they would
#: break Redis hash tags), at most 128 characters.
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/+\-]{0,127}")
IDENTIFIER_RULE = "1-128 characters of A-Z a-z 0-9 _ . : @ / + -, starting with a letter or digit"
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_METADATA_ENTRIES = 64
MAX_METADATA_VALUE_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Turn:
    """One accepted turn, with the log position it was read from."""

    event_id: uuid.UUID
    tenant_id: str
    agent_id: str
    user_id: str
    project_id: str | None
    session_id: str
    role: Role
    content: str
    event_time: datetime
    tool_name: str | None = None
    tool_status: ToolStatus | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    shared: bool = False
    schema_id: int = 0
    topic: str = ""
    partition: int = -1
    offset: int = -1

    @property
    def session_key(self) -> tuple[str, str]:
        return (self.tenant_id, self.session_id)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, schema_id: int, topic: str, partition: int, offset: int) -> Turn:
        event_id = record["event_id"]
        return cls(
            event_id=event_id if isinstance(event_id, uuid.UUID) else uuid.UUID(str(event_id)),
            tenant_id=record["tenant_id"],
            agent_id=record["agent_id"],
            user_id=record["user_id"],
            project_id=record.get("project_id"),
            session_id=record["session_id"],
            role=record["role"],
            content=record["content"],
            event_time=record["event_time"],
            tool_name=record.get("tool_name"),
            tool_status=record.get("tool_status"),
            tags=tuple(record.get("tags") or ()),
            metadata=dict(record.get("metadata") or {}),
            shared=bool(record.get("shared", False)),
            schema_id=schema_id,
            topic=topic,
            partition=partition,
            offset=offset,
        )


def turn_key(tenant_id: str, session_id: str) -> bytes:
    """The Kafka key: one session's turns land on one partition, in order."""
    return f"{tenant_id}\x1f{session_id}".encode()


def problems(record: Mapping[str, Any], *, max_content_chars: int) -> list[str]:
    """Every rule the record breaks (empty when it is acceptable)."""
    found: list[str] = []
    for name in ("tenant_id", "agent_id", "user_id", "session_id"):
        value = record.get(name)
        if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
            found.append(f"{name} must be {IDENTIFIER_RULE}")
    project = record.get("project_id")
    if project is not None and (not isinstance(project, str) or not IDENTIFIER.fullmatch(project)):
        found.append(f"project_id must be null or {IDENTIFIER_RULE}")
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        found.append("content must be a non-empty string")
    elif len(content) > max_content_chars:
        found.append(f"content is {len(content)} characters; the limit is {max_content_chars}")
    elif "\x00" in content:
        found.append("content must not contain NUL characters")
    if record.get("role") not in ROLES:
        found.append(f"role must be one of {', '.join(ROLES)}")
    tags = record.get("tags") or []
    if len(tags) > MAX_TAGS or any(not t or len(t) > MAX_TAG_CHARS for t in tags):
        found.append(f"at most {MAX_TAGS} tags of 1-{MAX_TAG_CHARS} characters")
    metadata = record.get("metadata") or {}
    if len(metadata) > MAX_METADATA_ENTRIES or any(len(v) > MAX_METADATA_VALUE_CHARS for v in metadata.values()):
        found.append(f"at most {MAX_METADATA_ENTRIES} metadata entries of up to {MAX_METADATA_VALUE_CHARS} characters")
    return found
