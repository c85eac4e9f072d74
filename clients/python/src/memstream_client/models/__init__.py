"""Typed request and answer bodies of the gateway (its OpenAPI schemas, by friendlier names)."""

from memstream_client.models.base import Model
from memstream_client.models.memories import ForgottenMemory
from memstream_client.models.memory import Fact, Facts, Neighbor, Neighbors, Skill, Skills, ToolEvent
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
from memstream_client.models.users import Consent, Erasure

__all__ = [
    "AllowOnceRequest",
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
    "Skills",
    "TextSearchRequest",
    "TextSearchSettings",
    "ToolEvent",
    "Turn",
    "TurnBatch",
]
