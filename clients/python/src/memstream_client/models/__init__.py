"""Typed request and answer bodies of the gateway (its OpenAPI schemas, by friendlier names)."""

from memstream_client.models.audit import AuditPage, AuditRecord
from memstream_client.models.base import Model
from memstream_client.models.keys import Identity
from memstream_client.models.memories import ForgottenMemory, Memory, MemoryPage, MemorySource
from memstream_client.models.memory import (
    Fact,
    Facts,
    Neighbor,
    Neighbors,
    Skill,
    SkillPage,
    SkillRecord,
    Skills,
    ToolEvent,
)
from memstream_client.models.permissions import (
    AllowOnceRequest,
    Evaluation,
    Grant,
    PermissionRequest,
    Rule,
    RuleRequest,
    Rules,
)
from memstream_client.models.retrieval import (
    Context,
    ContextSection,
    Decomposition,
    ScoreParts,
    SearchHit,
    SearchResult,
)
from memstream_client.models.sessions import BufferedTurn, RollingSummary, SessionBuffer
from memstream_client.models.tenant import (
    ForgetPreview,
    PrivacyPolicy,
    RankingSettings,
    RetentionPolicy,
    TextSearchRequest,
    TextSearchSettings,
)
from memstream_client.models.turns import PublishResult, Turn, TurnBatch
from memstream_client.models.users import Consent, Erasure, UserPage, UserSummary

__all__ = [
    "AllowOnceRequest",
    "AuditPage",
    "AuditRecord",
    "BufferedTurn",
    "Consent",
    "Context",
    "ContextSection",
    "Decomposition",
    "Erasure",
    "Evaluation",
    "Fact",
    "Facts",
    "ForgetPreview",
    "ForgottenMemory",
    "Grant",
    "Identity",
    "Memory",
    "MemoryPage",
    "MemorySource",
    "Model",
    "Neighbor",
    "Neighbors",
    "PermissionRequest",
    "PrivacyPolicy",
    "PublishResult",
    "RankingSettings",
    "RetentionPolicy",
    "RollingSummary",
    "Rule",
    "RuleRequest",
    "Rules",
    "ScoreParts",
    "SearchHit",
    "SearchResult",
    "SessionBuffer",
    "Skill",
    "SkillPage",
    "SkillRecord",
    "Skills",
    "TextSearchRequest",
    "TextSearchSettings",
    "ToolEvent",
    "Turn",
    "TurnBatch",
    "UserPage",
    "UserSummary",
]
