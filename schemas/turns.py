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
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

Role = Literal["user", "assistant", "tool", "system"]
ToolStatus = Literal["success", "failure", "pending"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")

#: Identifiers (agent, user, project, session): no spaces, no braces, no control
#: characters, at most 128 characters. (Redis keys escape every part anyway:
#: ``sinks/redis/keys.py``.)
#: An id with ``/`` is a path an HTTP client may normalise (``a/../b`` is sent as ``b``), so
#: between slashes no segment is empty, ``.`` or ``..`` (written without look-arounds: the
#: same pattern is in the API document and checked by pydantic's regex engine).
_FIRST_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9_.:@+\-]*"
_SEGMENT = r"(?:[A-Za-z0-9_:@+\-][A-Za-z0-9_.:@+\-]*|\.[A-Za-z0-9_:@+\-][A-Za-z0-9_.:@+\-]*|\.\.[A-Za-z0-9_.:@+\-]+)"
IDENTIFIER = re.compile(f"{_FIRST_SEGMENT}(?:/{_SEGMENT})*")
MAX_IDENTIFIER = 128
IDENTIFIER_RULE = (
    "1-128 characters of A-Z a-z 0-9 _ . : @ / + -, starting with a letter or digit, with no"
    " empty, '.' or '..' segment between slashes and no slash at the end"
)


def is_identifier(value: object) -> bool:
    """An agent, user, project or session id by ``IDENTIFIER_RULE``."""
    return isinstance(value, str) and len(value) <= MAX_IDENTIFIER and IDENTIFIER.fullmatch(value) is not None


#: Tenant ids are narrower: lower case, so that two spellings never name two tenants, and
#: no separator characters at all.
TENANT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
TENANT_ID_RULE = "1-64 characters of a-z 0-9 _ -, starting with a letter or digit"
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_METADATA_ENTRIES = 64
MAX_METADATA_KEY_CHARS = 128
MAX_METADATA_VALUE_CHARS = 16_384
MAX_TOOL_NAME_CHARS = 128

#: Control characters: C0 (but tab, line feed and carriage return), DEL and C1 — and unpaired
#: surrogates, which no UTF-8 store can hold. Postgres cannot store NUL in text, and the
#: others have no business in memory (terminal escapes, the unit separator some keys use).
#: Text fields refuse them; one-line fields (tags, tool names, metadata keys) refuse tab and
#: line breaks too.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
CONTROL_OR_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")

#: Event times are the client's, within bounds: not before 2000, and not more than this far
#: ahead of the clock of whoever checks (the gateway; the worker allows twice as much for
#: clock skew between machines). A turn dated far ahead would stay the newest forever.
EARLIEST_EVENT_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_FUTURE = timedelta(minutes=5)


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
    #: When memstream received it (``received_at``): what an erasure and a consent are ordered
    #: against, never ``event_time``, which the client chose. None (unknown) is forgotten
    #: whenever its user was ever erased.
    received_at: datetime | None = None

    @classmethod
    def from_record(
        cls,
        record: Mapping[str, Any],
        *,
        schema_id: int,
        topic: str,
        partition: int,
        offset: int,
        received_at: datetime | None = None,
    ) -> Turn:
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
            received_at=received_at,
        )


def received_at(timestamp_s: float | None, *, now: datetime) -> datetime | None:
    """When memstream received a record, from its Kafka timestamp (seconds): the gateway's
    clock when it published the turn, the broker's where a topic stamps the time it appends
    (``message.timestamp.type=LogAppendTime``), a direct producer's clock otherwise; every
    re-publication (retry, dead letter, its replay) keeps the original's. Never later than
    ``now`` (whoever reads it has received it by then); None when the record has no time."""
    if timestamp_s is None or timestamp_s <= 0:
        return None
    return min(datetime.fromtimestamp(timestamp_s, UTC), now)


def turn_key(tenant_id: str, session_id: str) -> bytes:
    """The Kafka key: one session's turns land on one partition, in order."""
    return f"{tenant_id}\x1f{session_id}".encode()


def control_problem(name: str, value: str, *, one_line: bool = False) -> str | None:
    """Why ``value`` may not be stored, if it holds a control character (None if it is clean)."""
    match = (CONTROL_OR_BREAK if one_line else CONTROL).search(value)
    if match is None:
        return None
    char = ord(match.group())
    if 0xD800 <= char <= 0xDFFF:
        return f"{name} must be valid Unicode: found an unpaired surrogate U+{char:04X}"
    what = "control characters or line breaks" if one_line else "control characters (other than tab and newline)"
    return f"{name} must not contain {what}: found U+{char:04X}"


def problems(
    record: Mapping[str, Any],
    *,
    max_content_chars: int,
    now: datetime | None = None,
    max_future: timedelta = MAX_FUTURE,
) -> list[str]:
    """Every rule the record breaks (empty when it is acceptable). ``now`` bounds the event
    time from above (``max_future`` ahead of it); without it only the lower bound applies."""
    found: list[str] = []
    tenant = record.get("tenant_id")
    if not isinstance(tenant, str) or not TENANT_ID.fullmatch(tenant):
        found.append(f"tenant_id must be {TENANT_ID_RULE}")
    for name in ("agent_id", "user_id", "session_id"):
        value = record.get(name)
        if not is_identifier(value):
            found.append(f"{name} must be {IDENTIFIER_RULE}")
    project = record.get("project_id")
    if project is not None and not is_identifier(project):
        found.append(f"project_id must be null or {IDENTIFIER_RULE}")
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        found.append("content must be a non-empty string")
    elif len(content) > max_content_chars:
        found.append(f"content is {len(content)} characters; the limit is {max_content_chars}")
    elif problem := control_problem("content", content):
        found.append(problem)
    if record.get("role") not in ROLES:
        found.append(f"role must be one of {', '.join(ROLES)}")
    when = record.get("event_time")
    if isinstance(when, datetime):
        if when.tzinfo is None or when < EARLIEST_EVENT_TIME:
            found.append(f"event_time must be a time with a timezone, from {EARLIEST_EVENT_TIME:%Y-%m-%d} on")
        elif now is not None and when > now + max_future:
            found.append(f"event_time may be at most {max_future.total_seconds() / 60:g} minutes in the future")
    tool_name = record.get("tool_name")
    if tool_name is not None:
        if not isinstance(tool_name, str) or not tool_name.strip() or len(tool_name) > MAX_TOOL_NAME_CHARS:
            found.append(f"tool_name must be null or 1-{MAX_TOOL_NAME_CHARS} characters")
        elif problem := control_problem("tool_name", tool_name, one_line=True):
            found.append(problem)
    tags = record.get("tags") or []
    if len(tags) > MAX_TAGS or any(not t or len(t) > MAX_TAG_CHARS for t in tags):
        found.append(f"at most {MAX_TAGS} tags of 1-{MAX_TAG_CHARS} characters")
    found.extend(p for t in tags if (p := control_problem("a tag", t, one_line=True)))
    metadata = record.get("metadata") or {}
    if (
        len(metadata) > MAX_METADATA_ENTRIES
        or any(not k or len(k) > MAX_METADATA_KEY_CHARS for k in metadata)
        or any(len(v) > MAX_METADATA_VALUE_CHARS for v in metadata.values())
    ):
        found.append(
            f"at most {MAX_METADATA_ENTRIES} metadata entries, keys of 1-{MAX_METADATA_KEY_CHARS} characters,"
            f" values of up to {MAX_METADATA_VALUE_CHARS}"
        )
    found.extend(p for k in metadata if (p := control_problem("a metadata key", k, one_line=True)))
    found.extend(p for v in metadata.values() if (p := control_problem("a metadata value", v)))
    return found
