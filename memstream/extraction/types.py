"""What an extractor sees and what it returns."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Scope = Literal["global", "project", "session"]
Category = Literal["preference", "rule", "constraint", "entity", "decision"]
SCOPES: tuple[Scope, ...] = ("global", "project", "session")
CATEGORIES: tuple[Category, ...] = ("preference", "rule", "constraint", "entity", "decision")


@dataclass(frozen=True)
class ExtractionTurn:
    event_id: uuid.UUID
    role: str  # user | assistant | tool | system
    content: str
    event_time: datetime
    session_id: str
    project_id: str | None = None
    tool_name: str | None = None
    tool_status: str | None = None


@dataclass(frozen=True)
class ExtractionContext:
    tenant_id: str
    user_id: str
    agent_id: str
    session_id: str
    project_id: str | None
    #: Event time of the turn being extracted ("now", "today", "yesterday" are relative to it).
    now: datetime
    #: The user's most recent session before this one ("last session"), if any.
    previous_session_id: str | None
    #: Preceding turns of this session, oldest first (context for pronouns and answers).
    recent: tuple[ExtractionTurn, ...] = ()


@dataclass(frozen=True)
class Triple:
    """A relation between two entities, e.g. ("cloudretail", "uses", "fastapi")."""

    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class ExtractedFact:
    #: Canonical entity the fact is about, lowercase words: "backend framework", "editor",
    #: "database", "cache", "tool timeout", "deployment region", "deployment tool", "theme".
    #: Two statements about the same thing must get the same entity so the newer one
    #: supersedes the older.
    entity: str
    category: Category
    scope: Scope
    #: Set exactly when scope == "project".
    project_id: str | None
    #: One self-contained sentence, with relative time rewritten to explicit session ids
    #: or dates ("in session s-42", "on 2026-11-29").
    summary: str
    #: 0..1
    importance: float
    triples: tuple[Triple, ...] = ()


def normalise_entity(name: str) -> str:
    """Lowercase, single spaces, no surrounding punctuation."""
    return " ".join(name.lower().replace("_", " ").split()).strip(" .,:;!?\"'")
