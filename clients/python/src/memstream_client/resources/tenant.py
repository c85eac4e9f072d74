"""``client.tenant``: the tenant's own settings — privacy, retention, ranking and full-text
language. ``get`` reads one (any key with ``read``); ``set`` replaces it whole (an admin key
not bound to an agent), a field left out taking its default."""

from __future__ import annotations

from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.tenant import (
    ForgetPreview,
    PrivacyPolicy,
    RankingSettings,
    RetentionPolicy,
    TextSearchRequest,
    TextSearchSettings,
)
from memstream_client.resource import AsyncMethod, AsyncResource, AsyncSender, SyncMethod, SyncResource, SyncSender


@endpoint("GET", "/v1/tenant/privacy", response=PrivacyPolicy)
def get_privacy() -> RequestParts:
    """What is redacted beyond secrets."""
    return RequestParts()


@endpoint("PUT", "/v1/tenant/privacy", body=PrivacyPolicy, response=PrivacyPolicy)
def set_privacy(*, redact_email: bool = False, redact_phone: bool = False) -> RequestParts:
    """Redact e-mail addresses and/or phone numbers in everything stored from now on."""
    return RequestParts(json=PrivacyPolicy(redact_email=redact_email, redact_phone=redact_phone).to_json())


@endpoint("GET", "/v1/tenant/retention", response=RetentionPolicy)
def get_retention() -> RequestParts:
    """The retention policy."""
    return RequestParts()


@endpoint("PUT", "/v1/tenant/retention", body=RetentionPolicy, response=RetentionPolicy)
def set_retention(
    *,
    compact_after_days: int | None = None,
    min_importance: float | None = None,
    max_age_days: int | None = None,
    max_per_user: int | None = None,
    unaccessed_days: int | None = None,
    decay_half_life_days: float | None = None,
) -> RequestParts:
    """Set compaction, decay and retention; None switches a rule off."""
    policy = RetentionPolicy(
        compact_after_days=compact_after_days, min_importance=min_importance, max_age_days=max_age_days,
        max_per_user=max_per_user, unaccessed_days=unaccessed_days, decay_half_life_days=decay_half_life_days,
    )  # fmt: skip
    return RequestParts(json=policy.to_json())


@endpoint("GET", "/v1/tenant/retention/preview", response=ForgetPreview)
def preview_retention() -> RequestParts:
    """A dry run: what the retention policy would forget now (an admin key)."""
    return RequestParts()


@endpoint("GET", "/v1/tenant/ranking", response=RankingSettings)
def get_ranking() -> RequestParts:
    """The RRF weights and decay half-life."""
    return RequestParts()


@endpoint("PUT", "/v1/tenant/ranking", body=RankingSettings, response=RankingSettings)
def set_ranking(
    *, vector_weight: float | None = None, text_weight: float | None = None, half_life_days: float | None = None
) -> RequestParts:
    """Set the RRF weights (0, or 1e-6 to 10) and the decay half-life; None: the deployment's default."""
    settings = RankingSettings(vector_weight=vector_weight, text_weight=text_weight, half_life_days=half_life_days)
    return RequestParts(json=settings.to_json())


@endpoint("GET", "/v1/tenant/text-search", response=TextSearchSettings)
def get_text_search() -> RequestParts:
    """The full-text language: what the tenant set, what is in effect, and what the database has."""
    return RequestParts()


@endpoint("PUT", "/v1/tenant/text-search", body=TextSearchRequest, response=TextSearchSettings)
def set_text_search(*, config: str | None = None) -> RequestParts:
    """Set the full-text language (a configuration of the database, e.g. ``german``; None: the
    deployment's default). The tenant's memories are re-indexed in it."""
    return RequestParts(json=TextSearchRequest(config=config).to_json())


class Privacy(SyncResource):
    get = SyncMethod(get_privacy)
    set = SyncMethod(set_privacy)


class AsyncPrivacy(AsyncResource):
    get = AsyncMethod(get_privacy)
    set = AsyncMethod(set_privacy)


class Retention(SyncResource):
    get = SyncMethod(get_retention)
    set = SyncMethod(set_retention)
    preview = SyncMethod(preview_retention)


class AsyncRetention(AsyncResource):
    get = AsyncMethod(get_retention)
    set = AsyncMethod(set_retention)
    preview = AsyncMethod(preview_retention)


class Ranking(SyncResource):
    get = SyncMethod(get_ranking)
    set = SyncMethod(set_ranking)


class AsyncRanking(AsyncResource):
    get = AsyncMethod(get_ranking)
    set = AsyncMethod(set_ranking)


class TextSearch(SyncResource):
    get = SyncMethod(get_text_search)
    set = SyncMethod(set_text_search)


class AsyncTextSearch(AsyncResource):
    get = AsyncMethod(get_text_search)
    set = AsyncMethod(set_text_search)


class Tenant(SyncResource):
    def __init__(self, client: SyncSender) -> None:
        super().__init__(client)
        self.privacy = Privacy(client)
        self.retention = Retention(client)
        self.ranking = Ranking(client)
        self.text_search = TextSearch(client)


class AsyncTenant(AsyncResource):
    def __init__(self, client: AsyncSender) -> None:
        super().__init__(client)
        self.privacy = AsyncPrivacy(client)
        self.retention = AsyncRetention(client)
        self.ranking = AsyncRanking(client)
        self.text_search = AsyncTextSearch(client)
