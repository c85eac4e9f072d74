"""Request and response bodies of the gateway (they are also its OpenAPI document)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictStr,
    ValidationInfo,
    field_validator,
)

from agents_gateway.openapi import ONE_LINE_NONBLANK_PATTERN, TEXT_NONBLANK_PATTERN, model_properties
from schemas.turns import (
    IDENTIFIER,
    IDENTIFIER_RULE,
    MAX_IDENTIFIER,
    MAX_METADATA_ENTRIES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_VALUE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    TENANT_ID,
    Role,
    ToolStatus,
    control_problem,
    is_identifier,
)
from sinks.postgres.maintenance import MAX_DAYS, MIN_HALF_LIFE_DAYS


def _identifier(value: str) -> str:
    if not is_identifier(value):
        raise ValueError(f"must be {IDENTIFIER_RULE}")
    return value


#: An identifier (agent, user, project, session): checked with a message that says the rule,
#: and with its pattern in the document.
Identifier = Annotated[
    StrictStr,
    AfterValidator(_identifier),
    Field(json_schema_extra={"pattern": f"^{IDENTIFIER.pattern}$", "maxLength": MAX_IDENTIFIER}),
]
#: A tenant named in a body: any other than the key's is a 403 (``Principal.check_tenant``),
#: whatever its shape; the document gives the shape tenant ids have.
TenantId = Annotated[StrictStr, Field(json_schema_extra={"pattern": f"^{TENANT_ID.pattern}$"})]


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string (not only whitespace)")
    return value


def _integral(value: Any) -> Any:
    """JSON Schema's integer is any number without a fraction: ``20973.0`` is 20973."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An integer of a request body: strict (no strings, no booleans), but 5.0 is 5.
Int = Annotated[int, BeforeValidator(_integral)]
#: A number of days in a tenant's settings (bounds inside the type, so the document has them).
Days = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=MAX_DAYS)]


def _refuse_control(name: str, value: Any, *, one_line: bool) -> None:
    """Raise if any string in ``value`` (nested lists and dicts, keys too) holds a control character."""
    if isinstance(value, str):
        if problem := control_problem(name, value, one_line=one_line):
            raise ValueError(problem)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_control(f"{name} key", key, one_line=True)
            _refuse_control(name, item, one_line=one_line)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_control(name, item, one_line=one_line)


def _agent_required(schema: dict[str, Any]) -> None:
    """The document requires ``agent_id``: what any key may send. A key bound to an agent may
    leave it out (the key names the agent), which the document cannot say per key."""
    schema["required"] = sorted({*schema.get("required", []), "agent_id"})
    agent = schema["properties"]["agent_id"]
    schema["properties"]["agent_id"] = {
        "type": "string", "pattern": f"^{IDENTIFIER.pattern}$", "maxLength": MAX_IDENTIFIER,
        "title": agent.get("title", "Agent Id"),
        "description": agent.get("description", ""),
    }  # fmt: skip


class RequestModel(BaseModel):
    """A request body: unknown fields refused, no coercion, and no control characters in any
    string (the same rule as the turn contract, ``schemas/turns.py``), so nothing is accepted
    that cannot be stored. Fields in ``one_line`` refuse tabs and line breaks too."""

    model_config = ConfigDict(extra="forbid", strict=True)
    one_line: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        """The document says what the validator below enforces: no control characters."""
        schema = handler(core_schema)
        model_properties(cls, handler.resolve_ref_schema(schema), cls.one_line)
        return schema

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or "field"
        _refuse_control(name, value, one_line=name in cls.one_line)
        return value


class TurnIn(RequestModel):
    """One conversation turn (or tool call/outcome) an agent reports."""

    model_config = ConfigDict(json_schema_extra=_agent_required)

    one_line = frozenset({"tags", "tool_name"})

    event_id: uuid.UUID | None = Field(
        default=None,
        description="Idempotency key. Send the same id again (e.g. after a timeout) and the "
        "turn is stored once. Generated when absent.",
    )
    tenant_id: TenantId | None = Field(
        default=None, description="Optional: the API key's tenant. Naming another tenant is refused (403)."
    )
    agent_id: Identifier | None = Field(
        default=None, description=f"{IDENTIFIER_RULE}. Optional when the key is bound to an agent."
    )
    user_id: Identifier = Field(description=IDENTIFIER_RULE)
    project_id: Identifier | None = Field(default=None, description=IDENTIFIER_RULE)
    session_id: Identifier = Field(description=IDENTIFIER_RULE)
    role: Role
    content: Annotated[
        StrictStr,
        AfterValidator(_nonblank),
        Field(json_schema_extra={"minLength": 1, "pattern": TEXT_NONBLANK_PATTERN}),
    ]
    event_time: datetime | None = Field(
        default=None,
        description="When it happened, ISO 8601 with a timezone; the gateway's clock when absent.",
    )
    tool_name: (
        Annotated[StrictStr, Field(max_length=128, json_schema_extra={"pattern": ONE_LINE_NONBLANK_PATTERN})] | None
    ) = None
    tool_status: ToolStatus | None = None
    tags: list[Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TAGS
    )
    metadata: dict[
        Annotated[StrictStr, Field(min_length=1, max_length=MAX_METADATA_KEY_CHARS)],
        Annotated[StrictStr, Field(max_length=MAX_METADATA_VALUE_CHARS)],
    ] = Field(default_factory=dict, max_length=MAX_METADATA_ENTRIES)
    shared: bool = Field(
        default=False, description="Visible to every agent of the tenant (default: private to agent_id)."
    )

    @field_validator("event_id", mode="before")
    @classmethod
    def _uuid_from_json(cls, value: Any) -> Any:
        # strict mode accepts only UUID instances; JSON carries strings.
        if isinstance(value, str):
            try:
                return uuid.UUID(value)
            except ValueError as exc:
                raise ValueError("event_id must be a UUID") from exc
        return value

    @field_validator("event_time", mode="before")
    @classmethod
    def _time_from_json(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError("event_time must be an ISO 8601 timestamp") from exc
            if parsed.tzinfo is None:
                raise ValueError("event_time must include a timezone (e.g. 2026-11-30T09:00:00Z)")
            return parsed
        return value


class TurnBatchIn(RequestModel):
    turns: list[TurnIn] = Field(min_length=1)


class TurnsAccepted(BaseModel):
    accepted: int
    event_ids: list[uuid.UUID]


class BufferedTurn(BaseModel):
    event_id: uuid.UUID
    agent_id: str
    user_id: str
    project_id: str | None
    role: str
    content: str
    event_time: datetime
    tool_name: str | None = None
    tool_status: str | None = None
    shared: bool = False
    tokens: int


class RollingSummaryOut(BaseModel):
    text: str
    summarizer: str
    through: datetime = Field(description="Event time of the newest turn folded into the summary.")
    turns: int = Field(description="Turns folded in so far.")
    calls: int = Field(description="Summariser calls so far.")
    input_tokens: int
    output_tokens: int


class BufferOut(BaseModel):
    tenant_id: str
    user_id: str
    session_id: str
    summary: RollingSummaryOut | None = Field(description="The rolling summary of older turns.")
    pending: list[BufferedTurn] = Field(description="Turns beyond the window, not yet folded in.")
    turns: list[BufferedTurn] = Field(description="The window: the newest turns, oldest first.")
    total_tokens: int = Field(description="Tokens of the window's turns.")


class ScoreParts(BaseModel):
    """How a hit's score came about: relevance = rrf x decay x boost; with MMR, score = relevance
    - (1 - 0.7) / 0.7 x the best relevance x mmr_penalty (without it, score = relevance)."""

    vector_rank: int | None = Field(description="1-based rank by vector similarity, if a candidate.")
    text_rank: int | None = Field(description="1-based rank by full-text relevance, if a candidate.")
    rrf: float = Field(description="Reciprocal-rank fusion of the two ranks (scaled per sub-query).")
    decay: float = Field(
        description="Temporal decay, floor + (1 - floor) * 0.5 ** (age / half-life); 1 for facts and skills."
    )
    boost: float = Field(description="Importance and tag boost.")
    relevance: float = Field(description="rrf x decay x boost: the score before MMR's penalty for redundancy.")
    mmr_penalty: float = Field(description="Highest cosine to a hit ranked above it.")


class SearchHit(BaseModel):
    kind: Literal["episode", "fact", "skill"]
    id: uuid.UUID = Field(description="The event id of an episode, the fact id, or the skill id.")
    memory_type: str = Field(description="episodic, procedural, summary, fact or skill")
    content: str
    session_id: str | None
    project_id: str | None
    agent_id: str | None
    role: str | None
    scope: str | None = Field(description="For facts: global, project or session.")
    importance: float
    tags: list[str]
    created_at: datetime
    score: float = Field(
        description="What the hits are ordered by (higher first): the relevance less MMR's penalty for "
        "redundancy (parts)."
    )
    parts: ScoreParts
    sub_queries: list[int] = Field(description="Indices of the sub-queries that found it.")


class DecompositionOut(BaseModel):
    method: str = Field(description="off, rules, or llm:<model>")
    queries: list[str]


class SearchOut(BaseModel):
    query: str
    k: int
    embedding_model: str
    decomposition: DecompositionOut
    vector_scan: Literal["exact", "hnsw"] = Field(
        description="How the nearest episodes were found: exact distances, or the HNSW index (large users)."
    )
    hits: list[SearchHit]


class ContextSectionOut(BaseModel):
    name: Literal["facts", "summary", "recent", "relevant"]
    tokens: int
    items: int
    dropped: int = Field(description="Candidates left out to stay within the budget.")


class ContextOut(BaseModel):
    prompt: str = Field(description="The packed context, in the stable layout described in the docs.")
    tokens: int
    budget: int
    tokenizer: str
    sections: list[ContextSectionOut]
    naive_tokens: int = Field(
        description="Tokens of a prompt stuffed with the user's whole history (live episodic turns) instead."
    )
    saved_tokens: int
    saved_ratio: float
    decomposition: DecompositionOut
    vector_scan: Literal["exact", "hnsw"] | None = Field(
        default=None, description="How the relevant memories' nearest episodes were found (none without a query)."
    )
    facts: list[uuid.UUID]
    relevant: list[SearchHit]


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[dict[str, Any]] = Field(default_factory=list)


class ErrorOut(BaseModel):
    error: ErrorBody


class CheckOut(BaseModel):
    ok: bool
    detail: str


class ReadyOut(BaseModel):
    status: Literal["ready", "not ready"]
    checks: dict[str, CheckOut]


class WorkerRoleOut(BaseModel):
    """One worker role (consumer group) as its heartbeats and defect record in Redis say."""

    state: Literal["consuming", "absent", "stopped_on_defect", "unknown"] = Field(
        description="consuming: a worker holds partitions; absent: none announced itself within "
        "MEMSTREAM_WORKER_HEARTBEAT_TTL_S; stopped_on_defect: a worker stopped on a code defect and no "
        "batch has gone through since; unknown: Redis did not answer"
    )
    required: bool = Field(description="Whether this request asked for the role (an absent one is then a 503)")
    workers: int = Field(description="Workers of the role that announced themselves within their time-to-live")
    partitions: int = Field(description="Partitions those workers hold between them")
    detail: str


class WorkersOut(BaseModel):
    status: Literal["ready", "not ready"]
    roles: dict[str, WorkerRoleOut]


class EvaluateIn(RequestModel):
    one_line = frozenset({"tool"})

    session_id: Identifier
    project_id: Identifier | None = None
    agent_id: Identifier | None = Field(
        default=None,
        description="The agent the evaluation acts for (an agent-bound key's own; naming another is a 403): "
        "it may use that agent's allow-once grants.",
    )
    tool: StrictStr = Field(min_length=1, max_length=128)
    command: StrictStr = Field(min_length=1, max_length=8192)


class EvaluateOut(BaseModel):
    decision: Literal["ALLOW", "BLOCK", "PENDING"]
    tier: Literal["preapproved", "allow_once", "project", "global", "none", "budget_exceeded"]
    reason: str
    rule_id: uuid.UUID | None = None
    grant_id: uuid.UUID | None = None


class AllowOnceIn(EvaluateIn):
    """A grant for exactly this session, project (or none), tool and command; with
    ``agent_id``, used only by evaluations acting for that agent, else by any."""


class AllowOnceOut(BaseModel):
    grant_id: uuid.UUID
    expires_in_s: int


class RuleIn(RequestModel):
    one_line = frozenset({"tool"})

    project_id: Identifier | None = Field(default=None, description="Omit for a global (tier 3) rule.")
    tool: StrictStr = Field(min_length=1, max_length=128)
    effect: Literal["ALLOW", "BLOCK"]
    pattern: StrictStr = Field(min_length=1, max_length=512, description="RE2 syntax, searched in the command.")
    position: Int = Field(default=0, ge=-1_000_000, le=1_000_000)
    description: StrictStr = Field(default="", max_length=1000)


class RuleOut(BaseModel):
    rule_id: uuid.UUID
    project_id: str | None
    tool: str
    effect: str
    pattern: str
    position: int
    description: str
    created_at: datetime


class RulesOut(BaseModel):
    rules: list[RuleOut]


class PrivacyPolicyIO(RequestModel):
    redact_email: bool = False
    redact_phone: bool = False


class ErasureOut(BaseModel):
    erasure_id: uuid.UUID
    erased_at: datetime
    episodes: int
    events: int
    sessions: int
    buffers: int


class ConsentOut(BaseModel):
    consent_id: uuid.UUID
    consented_at: datetime = Field(description="Turns of the user dated after this are stored again.")
    after_erasure: bool = Field(description="Whether the user had been erased (otherwise nothing changes).")


class ForgottenOut(BaseModel):
    """What ``DELETE /v1/memories/{memory_id}`` forgot."""

    kind: Literal["episode", "fact"]
    id: uuid.UUID = Field(description="The memory forgotten: an episode's event id or a fact version's id.")
    memory_type: str = Field(description="episodic, procedural or summary (an episode), or fact")
    forgotten_at: datetime
    repeated: bool = Field(
        description="It had been forgotten before: this repeats that answer, and nothing more was removed."
    )
    buffer_turns: int = Field(description="Entries of the turn removed from its session buffer (0 if none).")
    summary_dropped: bool = Field(
        description="The session's rolling summary was dropped: it had folded in turns up to this one's time, "
        "so it may have held it."
    )
    restored_fact_id: uuid.UUID | None = Field(
        description="A fact: the earlier version that takes its place (current again when the forgotten version "
        "was current), as if the forgotten one had never been stated; null for an episode or a first version."
    )


class FactOut(BaseModel):
    fact_id: uuid.UUID
    user_id: str
    agent_id: str
    session_id: str
    project_id: str | None
    scope: Literal["global", "project", "session"]
    entity: str
    category: str
    summary: str
    importance: float
    version: int
    valid_from: datetime
    valid_to: datetime | None = Field(description="Null while current.")
    superseded_by: uuid.UUID | None
    change_reason: str
    source_event_id: uuid.UUID
    sources: list[uuid.UUID] = Field(description="Every event that stated it (merged duplicates).")
    extractor: str


class FactsOut(BaseModel):
    user_id: str
    at: datetime | None
    facts: list[FactOut]


class NeighborOut(BaseModel):
    entity: str
    depth: int
    path: list[str] = Field(description='The shortest path found, as "subject -predicate-> object" hops.')


class NeighborsOut(BaseModel):
    entity: str
    depth: int
    direction: Literal["out", "in", "both"]
    neighbors: list[NeighborOut]


class SkillOut(BaseModel):
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str]
    attempts: int
    successes: int
    success_rate: float = Field(description="successes / attempts, as everywhere a rate is shown.")
    similarity: float
    score: float = Field(
        description="What the skills are ranked by: similarity x (successes + 1) / (attempts + 2), a rate "
        "smoothed for ranking only (one success of one attempt counts as 2/3)."
    )
    last_used_at: datetime | None
    last_feedback: str | None


class SkillsOut(BaseModel):
    task: str
    skills: list[SkillOut]


#: Steps of a tool event: at most this many, of at most this many characters — they travel
#: as one JSON metadata value, which then always fits its limit (escapes included).
MAX_STEPS = 50
MAX_STEP_CHARS = 150
Step = Annotated[
    StrictStr, Field(min_length=1, max_length=MAX_STEP_CHARS, json_schema_extra={"pattern": ONE_LINE_NONBLANK_PATTERN})
]


class ToolEventIn(RequestModel):
    """The outcome of a tool call or of a whole skill (e.g. a deploy), for procedural memory."""

    model_config = ConfigDict(json_schema_extra=_agent_required)

    one_line = frozenset({"skill", "tool_name", "steps"})

    event_id: uuid.UUID | None = None
    agent_id: Identifier | None = None
    user_id: Identifier
    session_id: Identifier
    project_id: Identifier | None = None
    skill: StrictStr = Field(
        min_length=1, max_length=128, description="What was attempted, e.g. 'deploy'.",
        json_schema_extra={"pattern": ONE_LINE_NONBLANK_PATTERN},
    )  # fmt: skip
    tool_name: StrictStr | None = Field(default=None, max_length=128)
    status: Literal["success", "failure"]
    feedback: StrictStr | None = Field(default=None, max_length=4000, description="What went wrong, or advice.")
    steps: list[Step] = Field(default_factory=list, max_length=MAX_STEPS, description="What was done, in order.")
    shared: bool = Field(
        default=False, description="Visible to every agent of the tenant (default: private to agent_id, like a turn)."
    )
    event_time: datetime | None = None

    @field_validator("skill")
    @classmethod
    def _skill_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("skill must name what was attempted (not only spaces)")
        return value

    @field_validator("event_id", mode="before")
    @classmethod
    def _uuid_from_json(cls, value: Any) -> Any:
        return TurnIn._uuid_from_json(value)

    @field_validator("event_time", mode="before")
    @classmethod
    def _time_from_json(cls, value: Any) -> Any:
        return TurnIn._time_from_json(value)


#: A ranking weight is 0 or at least a millionth: a smaller one underflows a ``real`` column.
#: (Days: 100 years at most, a half-life of about 15 minutes at least, as maintenance can use.)
MIN_WEIGHT = 1e-6


def _importance_zero_or_enough(schema: dict[str, Any]) -> None:
    schema["properties"]["min_importance"]["anyOf"] = [
        {"const": 0},
        {"type": "number", "minimum": MIN_WEIGHT, "maximum": 1},
        {"type": "null"},
    ]


class RetentionIO(RequestModel):
    """The tenant's retention policy; null switches a rule off."""

    model_config = ConfigDict(json_schema_extra=_importance_zero_or_enough)

    compact_after_days: Days | None = None
    min_importance: float | None = Field(default=None, ge=0, le=1, description=f"0, or {MIN_WEIGHT:g} to 1")
    max_age_days: Days | None = None
    max_per_user: Annotated[int, BeforeValidator(_integral), Field(ge=1, le=1_000_000_000)] | None = None
    unaccessed_days: Days | None = None
    decay_half_life_days: float | None = Field(default=None, ge=MIN_HALF_LIFE_DAYS, le=MAX_DAYS)

    @field_validator("min_importance")
    @classmethod
    def _zero_or_enough(cls, value: float | None) -> float | None:
        if value is not None and 0 < value < MIN_WEIGHT:  # a smaller one underflows a ``real``
            raise ValueError(f"min_importance is 0 or at least {MIN_WEIGHT:g}")
        return value


class ForgetPreviewOut(BaseModel):
    policy: RetentionIO
    by_rule: dict[str, int]
    would_forget: list[uuid.UUID]


class TextSearchIn(RequestModel):
    """The tenant's full-text language; null falls back to the deployment's default."""

    config: (
        Annotated[
            StrictStr,
            Field(max_length=63, pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$", examples=["german"]),
        ]
        | None
    ) = Field(default=None, description="A text-search configuration of the database (422 for one it lacks).")


class TextSearchOut(BaseModel):
    #: What the tenant set (null: the deployment's default).
    config: str | None
    #: What its rows are indexed in and queries use.
    effective: str
    available: list[str]
    #: Rows re-indexed by this change (PUT only).
    reindexed: dict[str, int] = Field(default_factory=dict)


def _weights_zero_or_enough(schema: dict[str, Any]) -> None:
    """A weight is 0 or at least ``MIN_WEIGHT``, as the validator says."""
    for name in ("vector_weight", "text_weight"):
        prop = schema["properties"][name]
        prop["anyOf"] = [{"const": 0}, {"type": "number", "minimum": MIN_WEIGHT, "maximum": 10}, {"type": "null"}]


class RankingIO(RequestModel):
    """Per-tenant ranking; null falls back to the deployment's default."""

    model_config = ConfigDict(json_schema_extra=_weights_zero_or_enough)

    vector_weight: float | None = Field(default=None, ge=0, le=10, description=f"0, or {MIN_WEIGHT:g} to 10")
    text_weight: float | None = Field(default=None, ge=0, le=10, description=f"0, or {MIN_WEIGHT:g} to 10")
    half_life_days: float | None = Field(default=None, ge=MIN_HALF_LIFE_DAYS, le=MAX_DAYS)

    @field_validator("vector_weight", "text_weight")
    @classmethod
    def _zero_or_enough(cls, value: float | None) -> float | None:
        if value is not None and 0 < value < MIN_WEIGHT:
            raise ValueError(f"a weight is 0 or at least {MIN_WEIGHT:g}")
        return value


# --- what the memory explorer reads (GET /v1/whoami, /v1/users, /v1/memories, /v1/skills, /v1/audit) ---


class WhoamiOut(BaseModel):
    tenant_id: str
    key_id: str = Field(description="The key's id (the part after msk_; never its secret).")
    agent_id: str | None = Field(
        description="The agent the key is bound to (it sees its own and shared memory); null for a tenant-level key."
    )
    scopes: list[str] = Field(description="Sorted: some of ingest, read, admin, system.")


class UserSummaryOut(BaseModel):
    user_id: str
    episodes: int = Field(
        description="The user's live (not archived) episodes — turns, lessons, daily summaries — this key may see."
    )
    last_seen: datetime | None = Field(
        description="The event time of the user's newest episode this key may see (null: only facts or skills)."
    )


class UserPageOut(BaseModel):
    users: list[UserSummaryOut] = Field(description="In user id order.")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class MemorySourceOut(BaseModel):
    event_id: uuid.UUID | None = Field(
        description="The event it came from: a turn's own; a lesson's failed tool outcome; a daily summary's "
        "compaction record in the event log (null when that record is not there)."
    )
    topic: str | None = Field(description="Where the event was consumed from (memstream.maintenance: a compaction).")
    partition: int | None = Field(description="The Kafka partition, when the event came through Kafka.")
    offset: int | None = Field(description="The Kafka offset, when the event came through Kafka.")
    produced_by: str | None = Field(description="The summariser that wrote a daily summary; null otherwise.")


class MemoryOut(BaseModel):
    id: uuid.UUID = Field(description="The episode's event id (what DELETE /v1/memories/{memory_id} takes).")
    memory_type: str = Field(description="episodic (a turn), procedural (a lesson) or summary (a daily summary)")
    archived: bool = Field(description="An original that compaction archived behind a daily summary (not served).")
    archived_at: datetime | None
    archived_into: uuid.UUID | None = Field(description="The id of the daily summary that replaced it.")
    role: str
    content: str
    session_id: str
    project_id: str | None
    agent_id: str = Field(description="The agent whose memory it is.")
    shared: bool = Field(description="Visible to the tenant's other agents.")
    importance: float
    tags: list[str]
    created_at: datetime = Field(description="The event time.")
    ingested_at: datetime = Field(description="When it was stored.")
    source: MemorySourceOut


class MemoryPageOut(BaseModel):
    user_id: str
    memories: list[MemoryOut] = Field(description="Newest first (event time, then id).")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class SkillRecordOut(BaseModel):
    skill_id: uuid.UUID
    name: str
    description: str
    steps: list[str] = Field(description="The steps of the newest outcome that had any.")
    attempts: int = Field(description="Outcomes this key may see (at least 1).")
    successes: int
    success_rate: float = Field(description="successes / attempts, as everywhere a rate is shown.")
    last_used_at: datetime = Field(description="The time of the newest outcome.")
    last_feedback: str | None = Field(description="The feedback of the newest outcome that had any.")
    created_at: datetime = Field(description="When the skill was first recorded.")


class SkillPageOut(BaseModel):
    user_id: str
    skills: list[SkillRecordOut] = Field(description="In name order.")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class AuditRecordOut(BaseModel):
    audit_id: uuid.UUID
    seq: int = Field(description="The record's position in the audit log (what memstream.audit.v1 carries).")
    at: datetime
    actor: str = Field(description="Who: an API key's id, or worker, maintenance, operator, replay.")
    action: str = Field(description="What, e.g. memory.insert, memory.delete, permission.decision, user.erase.")
    subject: str | None = Field(description="What it concerns: an id, a session, or a user by reference.")
    detail: dict[str, Any] = Field(
        description="Ids, counts and hashes, never memory content (commands and patterns redacted)."
    )


class AuditPageOut(BaseModel):
    records: list[AuditRecordOut] = Field(description="Newest first (time, then seq).")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")
