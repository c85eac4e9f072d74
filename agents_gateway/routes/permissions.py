"""The tool-permission engine over HTTP: evaluate, grant once, manage rules."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, ApiError
from agents_gateway.models import (
    AllowOnceIn,
    AllowOnceOut,
    EvaluateIn,
    EvaluateOut,
    RuleIn,
    RuleOut,
    RulesOut,
)
from agents_gateway.permissions import PatternError, compile_pattern, evaluate
from agents_gateway.state import GatewayState
from sinks.postgres.audit import append_audit
from sinks.postgres.rules import delete_rule, insert_rule, list_rules
from sinks.postgres.tenancy import tenant_transaction
from sinks.redis.grants import command_hash, grant_once

router = APIRouter(tags=["permissions"], responses=AUTH_ERRORS)


@router.post("/v1/permissions/evaluate", response_model=EvaluateOut, summary="May this tool run this command?")
async def evaluate_command(
    request: Request, body: EvaluateIn, principal: Annotated[Principal, Depends(scoped("read"))]
) -> EvaluateOut:
    state: GatewayState = request.app.state.gateway
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        verdict = await evaluate(
            conn, state.redis, tenant_id=principal.tenant_id, actor=principal.key_id,
            session_id=body.session_id, project_id=body.project_id, tool=body.tool, command=body.command,
            preapproved=state.settings.preapproved_tools,
        )  # fmt: skip
    state.metrics.permission_decisions.labels(decision=verdict.decision, tier=verdict.tier).inc()
    return EvaluateOut(**verdict.__dict__)


@router.post(
    "/v1/permissions/allow-once",
    response_model=AllowOnceOut,
    status_code=201,
    summary="Let this exact command run once in this session (a human's confirmation)",
)
async def allow_once(
    request: Request, body: AllowOnceIn, principal: Annotated[Principal, Depends(scoped("admin"))]
) -> AllowOnceOut:
    state: GatewayState = request.app.state.gateway
    ttl = state.settings.allow_once_ttl_s
    grant = await grant_once(
        state.redis, tenant_id=principal.tenant_id, session_id=body.session_id, tool=body.tool,
        command=body.command, ttl_s=ttl,
    )  # fmt: skip
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.allow_once",
            subject=body.session_id,
            detail={"tool": body.tool, "command_sha256": command_hash(body.tool, body.command),
                    "grant_id": str(grant), "ttl_s": ttl},
        )  # fmt: skip
    return AllowOnceOut(grant_id=grant, expires_in_s=ttl)


@router.post("/v1/permissions/rules", response_model=RuleOut, status_code=201, summary="Add a rule")
async def add_rule(
    request: Request, body: RuleIn, principal: Annotated[Principal, Depends(scoped("admin"))]
) -> RuleOut:
    state: GatewayState = request.app.state.gateway
    try:
        compile_pattern(body.pattern)
    except PatternError as exc:
        raise ApiError(422, "invalid_pattern", str(exc)) from exc
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        rule = await insert_rule(conn, tenant_id=principal.tenant_id, **body.model_dump())
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.rule.create",
            subject=str(rule.rule_id), detail=body.model_dump(),
        )  # fmt: skip
    return RuleOut(**rule.__dict__)


@router.get("/v1/permissions/rules", response_model=RulesOut, summary="The tenant's rules, in order")
async def get_rules(
    request: Request,
    principal: Annotated[Principal, Depends(scoped("read"))],
    tool: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
) -> RulesOut:
    state: GatewayState = request.app.state.gateway
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        rules = await list_rules(conn, tool=tool)
    return RulesOut(rules=[RuleOut(**r.__dict__) for r in rules])


@router.delete("/v1/permissions/rules/{rule_id}", status_code=204, summary="Remove a rule")
async def remove_rule(
    request: Request, rule_id: uuid.UUID, principal: Annotated[Principal, Depends(scoped("admin"))]
) -> Response:
    state: GatewayState = request.app.state.gateway
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        if not await delete_rule(conn, rule_id):
            raise ApiError(404, "not_found", "no such rule for this tenant")
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.rule.delete",
            subject=str(rule_id),
        )  # fmt: skip
    return Response(status_code=204)
