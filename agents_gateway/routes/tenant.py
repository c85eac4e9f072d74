"""The tenant's own settings: privacy, retention, ranking and full-text language."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

import psycopg
from fastapi import APIRouter, Depends

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, ApiError
from agents_gateway.models import ForgetPreviewOut, PrivacyPolicyIO, RankingIO, RetentionIO, TextSearchIn, TextSearchOut
from agents_gateway.state import Gateway, GatewayState
from memstream.privacy import PrivacyPolicy
from sinks.postgres.audit import append_audit
from sinks.postgres.maintenance import RetentionPolicy, forget, put_retention_policy, retention_policy
from sinks.postgres.migrate import text_search_configs
from sinks.postgres.tenancy import tenant_transaction
from sinks.postgres.tenant_settings import (
    RankingSettings,
    get_policy,
    get_tenant_settings,
    put_policy,
    put_ranking,
    put_text_search_config,
)

router = APIRouter(tags=["tenant"], responses=AUTH_ERRORS)
Conn = psycopg.AsyncConnection[Any]


async def change_setting(
    state: GatewayState,
    principal: Principal,
    action: str,
    write: Callable[[Conn], Awaitable[dict[str, Any]]],
    *,
    audited: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One change of a tenant-wide setting: ``write`` and its audit record (``action``, with
    what ``write`` returns, or its ``audited`` keys) in one transaction as the caller's key,
    then the gateway's cached copy of the tenant's settings forgotten. Returns what ``write``
    returned."""
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        done = await write(conn)
        detail = done if audited is None else {key: done[key] for key in audited}
        await append_audit(conn, tenant_id=principal.tenant_id, actor=principal.key_id, action=action, detail=detail)
    state.policies.forget(principal.tenant_id)
    return done


@router.get("/v1/tenant/privacy", response_model=PrivacyPolicyIO, summary="What is redacted beyond secrets")
async def read_privacy(state: Gateway, principal: Annotated[Principal, Depends(scoped("read"))]) -> PrivacyPolicyIO:
    async with tenant_transaction(state.pool, principal.tenant_id) as conn:
        policy = await get_policy(conn, principal.tenant_id)
    return PrivacyPolicyIO(**policy.__dict__)


@router.put("/v1/tenant/privacy", response_model=PrivacyPolicyIO, summary="Redact e-mail and/or phone numbers")
async def write_privacy(
    state: Gateway, body: PrivacyPolicyIO, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> PrivacyPolicyIO:
    async def write(conn: Conn) -> dict[str, Any]:
        await put_policy(conn, principal.tenant_id, PrivacyPolicy(**body.model_dump()))
        return body.model_dump()

    await change_setting(state, principal, "privacy.policy.update", write)
    return body


@router.get("/v1/tenant/retention", response_model=RetentionIO, summary="The tenant's retention policy")
async def read_retention(state: Gateway, principal: Annotated[Principal, Depends(scoped("read"))]) -> RetentionIO:
    async with tenant_transaction(state.pool, principal.tenant_id) as conn:
        policy = await retention_policy(conn, principal.tenant_id)
    return RetentionIO(**policy.__dict__)


@router.put("/v1/tenant/retention", response_model=RetentionIO, summary="Set compaction, decay and retention")
async def write_retention(
    state: Gateway, body: RetentionIO, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> RetentionIO:
    async def write(conn: Conn) -> dict[str, Any]:
        await put_retention_policy(conn, principal.tenant_id, RetentionPolicy(**body.model_dump()))
        return body.model_dump()

    await change_setting(state, principal, "retention.policy.update", write)
    return body


@router.get(
    "/v1/tenant/retention/preview",
    response_model=ForgetPreviewOut,
    summary="Dry run: what the retention policy would forget now",
)
async def preview_forgetting(
    state: Gateway, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> ForgetPreviewOut:
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        policy = await retention_policy(conn, principal.tenant_id)
        report = await forget(conn, principal.tenant_id, policy, dry_run=True)
    return ForgetPreviewOut(
        policy=RetentionIO(**policy.__dict__),
        by_rule={rule: len(ids) for rule, ids in report.by_rule.items()},
        would_forget=[uuid.UUID(i) for i in report.forgotten],
    )


@router.get("/v1/tenant/ranking", response_model=RankingIO, summary="RRF weights and decay half-life")
async def read_ranking(state: Gateway, principal: Annotated[Principal, Depends(scoped("read"))]) -> RankingIO:
    ranking = (await state.policies.settings(principal.tenant_id)).ranking
    return RankingIO(**ranking.__dict__)


@router.put("/v1/tenant/ranking", response_model=RankingIO, summary="Set the RRF weights and decay half-life")
async def write_ranking(
    state: Gateway, body: RankingIO, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> RankingIO:
    async def write(conn: Conn) -> dict[str, Any]:
        await put_ranking(conn, principal.tenant_id, RankingSettings(**body.model_dump()))
        return body.model_dump()

    await change_setting(state, principal, "ranking.update", write)
    return body


@router.get("/v1/tenant/text-search", response_model=TextSearchOut, summary="The full-text language")
async def read_text_search(state: Gateway, principal: Annotated[Principal, Depends(scoped("read"))]) -> TextSearchOut:
    async with tenant_transaction(state.pool, principal.tenant_id) as conn:
        config = (await get_tenant_settings(conn, principal.tenant_id)).text_search_config
        available = await text_search_configs(conn)
    return TextSearchOut(config=config, effective=config or state.settings.text_search_config, available=available)


@router.put(
    "/v1/tenant/text-search", response_model=TextSearchOut,
    summary="Set the full-text language; the tenant's memories are re-indexed in it",
)  # fmt: skip
async def write_text_search(
    state: Gateway, body: TextSearchIn, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> TextSearchOut:
    async def write(conn: Conn) -> dict[str, Any]:
        available = await text_search_configs(conn)
        config = body.config.removeprefix("pg_catalog.") if body.config else None
        if config is not None and config not in available:
            raise ApiError(
                422, "unknown_text_search_config",
                f"{body.config!r} is not a text-search configuration of this database",
                details=[{"available": available}],
            )  # fmt: skip
        effective = config or state.settings.text_search_config
        reindexed = await put_text_search_config(conn, principal.tenant_id, config, effective=effective)
        return {"config": config, "effective": effective, "reindexed": reindexed, "available": available}

    done = await change_setting(
        state, principal, "text_search.update", write, audited=("config", "effective", "reindexed")
    )
    return TextSearchOut(**done)
