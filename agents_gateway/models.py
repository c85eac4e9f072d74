"""Request and response bodies of the gateway (they are also its OpenAPI document)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationInfo, field_validator

from schemas.turns import IDENTIFIER_RULE, MAX_METADATA_VALUE_CHARS, Role, ToolStatus, control_problem
from sinks.postgres.maintenance import MAX_DAYS, MIN_HALF_LIFE_DAYS

Identifier = StrictStr


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


class RequestModel(BaseModel):
    """A request body: unknown fields refused, no coercion, and no control characters in any
    string (the same rule as the turn contract, ``schemas/turns.py``), so nothing is accepted
    that cannot be stored. Fields in ``one_line`` refuse tabs and line breaks too."""

    model_config = ConfigDict(extra="forbid", strict=True)
    one_line: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any, info: ValidationInfo) -> Any:
        name = info.field_name or "field"
        _refuse_control(name, value, one_line=name in cls.one_line)
        return value


class TurnIn(RequestModel):
    """One conversation turn (or tool call/outcome) an agent reports."""

    one_line = frozenset({"tags", "tool_name"})

    event_id: uuid.UUID | None = Field(
        default=None,
        description="Idempotency key. Send the same id again (e.g. after a timeout) and the "
        "turn is stored once. Generated when absent.",
    )
    tenant_id: Identifier | None = Field(
        default=None, description="Optional: the API key's tenant. Naming another tenant is refused (403)."
    )
    agent_id: Identifier | None = Field(
        default=None, description=f"{IDENTIFIER_RULE}. Optional when the key is bound to an agent."
    )
    user_id: Identifier = Field(description=IDENTIFIER_RULE)
    project_id: Identifier | None = Field(default=None, description=IDENTIFIER_RULE)
    session_id: Identifier = Field(description=IDENTIFIER_RULE)
    role: Role
    content: StrictStr
    event_time: datetime | None = Field(
        default=None,
        description="When it happened, ISO 8601 with a timezone; the gateway's clock when absent.",
    )
    tool_name: StrictStr | None = Field(default=None, max_length=128)
    tool_status: ToolStatus | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    metadata: dict[StrictStr, StrictStr] = Field(default_factory=dict)
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
    """How a hit's score came about: score = rrf x decay x boost (then MMR picks)."""

    vector_rank: int | None = Field(description="1-based rank by vector similarity, if a candidate.")
    text_rank: int | None = Field(description="1-based rank by full-text relevance, if a candidate.")
    rrf: float = Field(description="Reciprocal-rank fusion of the two ranks (scaled per sub-query).")
    decay: float = Field(
        description="Temporal decay, floor + (1 - floor) * 0.5 ** (age / half-life); 1 for facts and skills."
    )
    boost: float = Field(description="Importance and tag boost.")
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
    score: float = Field(description="Higher is better.")
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
    naive_tokens: int = Field(description="Tokens of a prompt stuffed with the user's whole history instead.")
    saved_tokens: int
    saved_ratio: float
    decomposition: DecompositionOut
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
    position: int = Field(default=0, ge=-1_000_000, le=1_000_000)
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
    success_rate: float = Field(description="Smoothed: (successes + 1) / (attempts + 2).")
    similarity: float
    score: float
    last_used_at: datetime | None
    last_feedback: str | None


class SkillsOut(BaseModel):
    task: str
    skills: list[SkillOut]


class ToolEventIn(RequestModel):
    """The outcome of a tool call or of a whole skill (e.g. a deploy), for procedural memory."""

    one_line = frozenset({"skill", "tool_name", "steps"})

    event_id: uuid.UUID | None = None
    agent_id: Identifier | None = None
    user_id: Identifier
    session_id: Identifier
    project_id: Identifier | None = None
    skill: StrictStr = Field(min_length=1, max_length=128, description="What was attempted, e.g. 'deploy'.")
    tool_name: StrictStr | None = Field(default=None, max_length=128)
    status: Literal["success", "failure"]
    feedback: StrictStr | None = Field(default=None, max_length=4000, description="What went wrong, or advice.")
    steps: list[StrictStr] = Field(
        default_factory=list, max_length=50,
        description=f"Up to 50 steps of 1-200 characters, {MAX_METADATA_VALUE_CHARS} characters as JSON in all.",
    )  # fmt: skip
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

    @field_validator("steps")
    @classmethod
    def _steps_fit(cls, value: list[str]) -> list[str]:
        if any(not step.strip() or len(step) > 200 for step in value):
            raise ValueError("each step has 1-200 characters (not only spaces)")
        if len(orjson.dumps(value)) > MAX_METADATA_VALUE_CHARS:
            raise ValueError(f"the steps take more than {MAX_METADATA_VALUE_CHARS} characters as JSON")
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


class RetentionIO(RequestModel):
    """The tenant's retention policy; null switches a rule off."""

    compact_after_days: int | None = Field(default=None, ge=1, le=MAX_DAYS)
    min_importance: float | None = Field(default=None, ge=0, le=1)
    max_age_days: int | None = Field(default=None, ge=1, le=MAX_DAYS)
    max_per_user: int | None = Field(default=None, ge=1, le=1_000_000_000)
    unaccessed_days: int | None = Field(default=None, ge=1, le=MAX_DAYS)
    decay_half_life_days: float | None = Field(default=None, ge=MIN_HALF_LIFE_DAYS, le=MAX_DAYS)


class ForgetPreviewOut(BaseModel):
    policy: RetentionIO
    by_rule: dict[str, int]
    would_forget: list[uuid.UUID]


class TextSearchIn(RequestModel):
    """The tenant's full-text language; null falls back to the deployment's default."""

    config: str | None = Field(default=None, max_length=63, examples=["german"])


class TextSearchOut(BaseModel):
    #: What the tenant set (null: the deployment's default).
    config: str | None
    #: What its rows are indexed in and queries use.
    effective: str
    available: list[str]
    #: Rows re-indexed by this change (PUT only).
    reindexed: dict[str, int] = Field(default_factory=dict)


class RankingIO(RequestModel):
    """Per-tenant ranking; null falls back to the deployment's default."""

    vector_weight: float | None = Field(default=None, ge=0, le=10, description=f"0, or {MIN_WEIGHT:g} to 10")
    text_weight: float | None = Field(default=None, ge=0, le=10, description=f"0, or {MIN_WEIGHT:g} to 10")
    half_life_days: float | None = Field(default=None, ge=MIN_HALF_LIFE_DAYS, le=MAX_DAYS)

    @field_validator("vector_weight", "text_weight")
    @classmethod
    def _zero_or_enough(cls, value: float | None) -> float | None:
        if value is not None and 0 < value < MIN_WEIGHT:
            raise ValueError(f"a weight is 0 or at least {MIN_WEIGHT:g}")
        return value
