"""What a person browsing an agent's memory reads (the memory explorer at /ui): who the key is,
the tenant's users, a user's memories as a timeline and their skills, and the audit log.

Each answer is what the key may see, exactly as for search: the tenant is the key's, a key
bound to an agent sees its own and shared memory (row-level security, ``tenant_transaction``),
and the scopes are checked as everywhere. A tenant-level key may name an ``agent_id`` to see
the memory as that agent sees it. Lists are keyset-paginated (``agents_gateway/pagination.py``):
each page ends with an opaque ``next_cursor``, null on the last page.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from agents_gateway.auth import Principal, authenticated, scoped
from agents_gateway.errors import AUTH_ERRORS
from agents_gateway.models import (
    AuditPageOut,
    AuditRecordOut,
    MemoryOut,
    MemoryPageOut,
    MemorySourceOut,
    SkillPageOut,
    SkillRecordOut,
    UserPageOut,
    UserSummaryOut,
    WhoamiOut,
)
from agents_gateway.pagination import (
    CURSOR_DESCRIPTION,
    CURSOR_PATTERN,
    DEFAULT_PAGE,
    MAX_CURSOR_CHARS,
    MAX_PAGE,
    CursorCodec,
    split_page,
)
from agents_gateway.routes.search import IsoTime, aware, csv, csv_of
from agents_gateway.routes.sessions import ID_PATTERN
from agents_gateway.state import Gateway
from schemas.turns import MAX_IDENTIFIER
from sinks.postgres.erasure import user_ref
from sinks.postgres.queries.audit import recent_audit
from sinks.postgres.queries.skills import SkillRecord, list_skills, success_rate
from sinks.postgres.queries.timeline import EPISODE_TYPES, TimelineEntry, TimelineFilters, user_timeline
from sinks.postgres.queries.users import list_users
from sinks.postgres.tenancy import tenant_transaction

router = APIRouter(tags=["explorer"], responses=AUTH_ERRORS)

USERS = CursorCodec("users", ("text",))
MEMORIES = CursorCodec("memories", ("time", "uuid"))
SKILLS = CursorCodec("skills", ("uuid",))
AUDIT = CursorCodec("audit", ("time", "int"))

#: An audit action (``memory.delete``), or a prefix of actions ending in a dot (``permission.``).
ACTION_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*\.?$"

Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"Rows per page (1-{MAX_PAGE})")]
Cursor = Annotated[
    str | None, Query(pattern=CURSOR_PATTERN, max_length=MAX_CURSOR_CHARS, description=CURSOR_DESCRIPTION)
]
UserId = Annotated[str, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)]
OptionalId = Annotated[str | None, Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER)]
ViewAgent = Annotated[
    str | None,
    Query(
        pattern=ID_PATTERN, max_length=MAX_IDENTIFIER,
        description="See the memory as this agent does: its own and shared memory (a key bound to an agent may name "
        "only its own; another is a 403)",
    ),
]  # fmt: skip


Since = Annotated[
    datetime | None,
    IsoTime,
    Query(description="ISO 8601 with a timezone: from this time on"),
]
Until = Annotated[
    datetime | None,
    IsoTime,
    Query(description="ISO 8601 with a timezone: before this time"),
]


@router.get("/v1/whoami", response_model=WhoamiOut, summary="The calling key: its tenant, agent and scopes")
async def whoami(principal: Annotated[Principal, Depends(authenticated)]) -> WhoamiOut:
    """Any valid key, whatever its scopes."""
    return WhoamiOut(
        tenant_id=principal.tenant_id, key_id=principal.key_id, agent_id=principal.agent_id,
        scopes=sorted(principal.scopes),
    )  # fmt: skip


@router.get("/v1/users", response_model=UserPageOut, summary="The tenant's users whose memory this key may see")
async def get_users(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    q: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_IDENTIFIER,
            description="Users whose id contains this, case-insensitively (% and _ are plain characters)",
        ),
    ] = None,
    agent_id: ViewAgent = None,
    limit: Limit = DEFAULT_PAGE,
    cursor: Cursor = None,
) -> UserPageOut:
    """In user id order. A user is listed when the key may see some memory of theirs: a live
    episode, a current fact, or a skill with an outcome; a key bound to an agent never sees a
    user that only another agent's private memory holds, and its counts are of what it sees."""
    after = USERS.decode(cursor)
    view = principal.check_agent(agent_id)
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=view, actor=principal.key_id) as conn:
        found = await list_users(
            conn, principal.tenant_id, contains=q, after=after[0] if after else None, limit=limit + 1
        )
    page, more = split_page(found, limit)
    return UserPageOut(
        users=[UserSummaryOut(user_id=u.user_id, episodes=u.episodes, last_seen=u.last_seen) for u in page],
        next_cursor=USERS.encode(page[-1].user_id) if more else None,
    )


@router.get("/v1/memories", response_model=MemoryPageOut, summary="A user's memories as a timeline, newest first")
async def get_memories(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    user_id: UserId,
    session_id: OptionalId = None,
    project_id: Annotated[
        str | None,
        Query(pattern=ID_PATTERN, max_length=MAX_IDENTIFIER, description="Exactly this project's memories"),
    ] = None,
    memory_type: Annotated[
        str | None,
        Query(description=f"Comma-separated: {', '.join(EPISODE_TYPES)}", pattern=csv_of(EPISODE_TYPES)),
    ] = None,
    include_archived: Annotated[
        bool, Query(description="Also the originals compaction archived behind a daily summary (marked archived)")
    ] = True,
    since: Since = None,
    until: Until = None,
    agent_id: ViewAgent = None,
    limit: Limit = DEFAULT_PAGE,
    cursor: Cursor = None,
) -> MemoryPageOut:
    """The user's episodes — turns (``episodic``), lessons (``procedural``), daily summaries
    (``summary``) — newest first by event time, each with where it came from. Forgotten and
    expired memories are not there; archived originals are, marked ``archived``."""
    filters = TimelineFilters(
        user_id=user_id, session_id=session_id, project_id=project_id,
        memory_types=csv(memory_type, EPISODE_TYPES, "memory_type") or EPISODE_TYPES,
        include_archived=include_archived, since=aware(since, "since"), until=aware(until, "until"),
    )  # fmt: skip
    after = MEMORIES.decode(cursor)
    view = principal.check_agent(agent_id)
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=view, actor=principal.key_id) as conn:
        found = await user_timeline(
            conn, principal.tenant_id, filters, after=(after[0], after[1]) if after else None, limit=limit + 1
        )
    page, more = split_page(found, limit)
    return MemoryPageOut(
        user_id=user_id, memories=[_memory_out(e) for e in page],
        next_cursor=MEMORIES.encode(page[-1].created_at, page[-1].event_id) if more else None,
    )  # fmt: skip


@router.get("/v1/skills", response_model=SkillPageOut, summary="A user's skills with their record, by name")
async def get_skills(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    user_id: UserId,
    agent_id: ViewAgent = None,
    limit: Limit = DEFAULT_PAGE,
    cursor: Cursor = None,
) -> SkillPageOut:
    """Attempts, successes, the last feedback and steps come from the outcomes this key may see
    (a key bound to an agent: its own and shared ones); a skill with none is not listed."""
    after = SKILLS.decode(cursor)
    view = principal.check_agent(agent_id)
    async with tenant_transaction(state.pool, principal.tenant_id, agent_id=view, actor=principal.key_id) as conn:
        found = await list_skills(
            conn, principal.tenant_id, user_id=user_id, after=after[0] if after else None, limit=limit + 1
        )
    page, more = split_page(found, limit)
    skills = [_skill_out(s) for s in page]
    return SkillPageOut(user_id=user_id, skills=skills, next_cursor=SKILLS.encode(page[-1].skill_id) if more else None)


@router.get("/v1/audit", response_model=AuditPageOut, summary="The tenant's audit records, newest first")
async def get_audit(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))],
    since: Since = None,
    until: Until = None,
    action: Annotated[
        str | None,
        Query(
            pattern=ACTION_PATTERN,
            max_length=64,
            description="One action (memory.delete), or every action under a prefix ending in a dot (permission.)",
        ),
    ] = None,
    user_id: Annotated[
        str | None,
        Query(
            pattern=ID_PATTERN,
            max_length=MAX_IDENTIFIER,
            description="Records naming this user (by its pseudonymous reference): erasure, consent, forgetting",
        ),
    ] = None,
    limit: Limit = DEFAULT_PAGE,
    cursor: Cursor = None,
) -> AuditPageOut:
    """Needs ``admin`` on a key not bound to an agent. Records hold ids, counts and hashes —
    commands and patterns redacted, users named by reference — never what a memory says."""
    after = AUDIT.decode(cursor)
    since, until = aware(since, "since"), aware(until, "until")
    ref = user_ref(principal.tenant_id, user_id) if user_id is not None else None
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        found = await recent_audit(
            conn, principal.tenant_id, since=since, until=until, action=action, user_ref=ref,
            after=(after[0], after[1]) if after else None, limit=limit + 1,
        )  # fmt: skip
    page, more = split_page(found, limit)
    records = [AuditRecordOut(**{k: v for k, v in r.__dict__.items() if k != "tenant_id"}) for r in page]
    return AuditPageOut(records=records, next_cursor=AUDIT.encode(page[-1].at, page[-1].seq) if more else None)


def _memory_out(e: TimelineEntry) -> MemoryOut:
    return MemoryOut(
        id=e.event_id, memory_type=e.memory_type, archived=e.archived_at is not None, archived_at=e.archived_at,
        archived_into=e.archived_into, role=e.role, content=e.content, session_id=e.session_id,
        project_id=e.project_id, agent_id=e.agent_id, shared=e.shared, importance=e.importance, tags=e.tags,
        created_at=e.created_at, ingested_at=e.ingested_at, source=MemorySourceOut(**e.source.__dict__),
    )  # fmt: skip


def _skill_out(s: SkillRecord) -> SkillRecordOut:
    return SkillRecordOut(
        skill_id=s.skill_id, name=s.name, description=s.description, steps=s.steps, attempts=s.attempts,
        successes=s.successes, success_rate=success_rate(s.successes, s.attempts), last_used_at=s.last_used_at,
        last_feedback=s.last_feedback, created_at=s.created_at,
    )  # fmt: skip
