"""The tenant's settings (gateway schemas ``PrivacyPolicyIO``, ``RetentionIO``,
``ForgetPreviewOut``, ``RankingIO``, ``TextSearchIn``, ``TextSearchOut``). A setting's
``set`` replaces the whole setting: a field left out takes its default."""

from __future__ import annotations

import uuid

from pydantic import Field

from memstream_client.models.base import Model


class PrivacyPolicy(Model):
    """What is redacted beyond secrets."""

    redact_email: bool = False
    redact_phone: bool = False


class RetentionPolicy(Model):
    """Compaction, decay and retention; None switches a rule off."""

    compact_after_days: int | None = None
    #: 0, or 1e-6 to 1.
    min_importance: float | None = None
    max_age_days: int | None = None
    max_per_user: int | None = None
    unaccessed_days: int | None = None
    decay_half_life_days: float | None = None


class ForgetPreview(Model):
    """What the retention policy would forget now (a dry run)."""

    policy: RetentionPolicy
    by_rule: dict[str, int]
    would_forget: list[uuid.UUID]


class RankingSettings(Model):
    """RRF weights and the decay half-life; None falls back to the deployment's default."""

    #: 0, or 1e-6 to 10.
    vector_weight: float | None = None
    #: 0, or 1e-6 to 10.
    text_weight: float | None = None
    half_life_days: float | None = None


class TextSearchRequest(Model):
    #: A text-search configuration of the database (e.g. ``german``); None: the deployment's default.
    config: str | None = None


class TextSearchSettings(Model):
    #: What the tenant set (None: the deployment's default).
    config: str | None
    #: What its rows are indexed in and queries use.
    effective: str
    available: list[str]
    #: Rows re-indexed by this change (``set`` only).
    reindexed: dict[str, int] = Field(default_factory=dict)
