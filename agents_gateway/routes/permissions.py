"""The tool-permission engine over HTTP: evaluate, grant once, manage rules.

Every string these endpoints take is refused (422) with NUL or a control character in it (a
command may hold tabs and line breaks); a rule's pattern must pass ``validate_pattern`` (422)
and the tenant's rule limits (409); evaluations match off the event loop within a budget, at
most ``permission_max_matching_per_tenant`` of one tenant at once (429 ``evaluations_busy``
beyond, so no tenant waits behind another's). An allow-once grant is bound to its session,
project (or none), tool and command, and to its agent when it names one.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from agents_gateway.auth import Principal, scoped
from agents_gateway.errors import AUTH_ERRORS, ApiError
from agents_gateway.models import (
    AllowOnceIn,
    AllowOnceOut,
    ErrorOut,
    EvaluateIn,
    EvaluateOut,
    RuleIn,
    RuleOut,
    RulesOut,
)
from agents_gateway.permissions import (
    EvaluationsBusy,
    PatternError,
    evaluate,
    rule_audit_detail,
    text_problem,
    validate_pattern,
)
from agents_gateway.routes.turns import refuse_identifiers
from agents_gateway.state import Gateway, GatewayState
from memstream.privacy import PrivacyPolicy
from sinks.postgres.audit import append_audit
from sinks.postgres.rules import count_rules, delete_rule, insert_rule, list_rules, lock_rules
from sinks.postgres.tenancy import tenant_transaction
from sinks.redis.grants import command_hash, grant_once

router = APIRouter(tags=["permissions"], responses=AUTH_ERRORS)

#: Seconds a caller told ``evaluations_busy`` should wait: an evaluation matches for at most
#: its budget (0.25 s by default) and one search more.
BUSY_RETRY_AFTER_S = 1


def refuse_control_characters(
    where: str, *, multiline: tuple[tuple[str, str | None], ...] = (), **one_line: str | None
) -> None:
    """422 naming the first field that holds NUL or a control character (Postgres cannot
    store NUL; the others have no business in a tool name, a pattern or the audit log)."""
    checks = [(name, value, True) for name, value in multiline] + [(n, v, False) for n, v in one_line.items()]
    for name, value, lines in checks:
        if problem := text_problem(name, value, multiline=lines):
            raise ApiError(
                422,
                "invalid_request",
                problem,
                details=[{"loc": [where, name], "msg": problem, "type": "control_character"}],
            )


def _refuse_in_command(body: EvaluateIn) -> None:
    refuse_control_characters(
        "body",
        multiline=(("command", body.command),),
        tool=body.tool,
        session_id=body.session_id,
        project_id=body.project_id,
        agent_id=body.agent_id,
    )


async def _refuse_identifiers(state: GatewayState, principal: Principal, **values: str | None) -> PrivacyPolicy:
    """422 for an identifier (tool included) carrying a secret or, under the tenant's policy,
    an e-mail address or a phone number: the rule turns follow (``refuse_identifiers``); the
    audit log never keeps such an id. Returns the tenant's policy, which the audit's
    redaction of commands, patterns and descriptions follows too."""
    return await refuse_identifiers(state, principal.tenant_id, values)


@router.post(
    "/v1/permissions/evaluate",
    response_model=EvaluateOut,
    summary="May this tool run this command?",
    responses={429: {"model": ErrorOut, "description": "Rate limit, or evaluations_busy (see Retry-After)"}},
)
async def evaluate_command(
    state: Gateway, body: EvaluateIn, principal: Annotated[Principal, Depends(scoped("read"))]
) -> EvaluateOut:
    _refuse_in_command(body)
    policy = await _refuse_identifiers(
        state, principal, session_id=body.session_id, project_id=body.project_id, agent_id=body.agent_id,
        tool=body.tool,
    )  # fmt: skip
    agent = principal.check_agent(body.agent_id)
    settings = state.settings
    try:
        async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
            evaluation = await evaluate(
                conn, state.redis, tenant_id=principal.tenant_id, actor=principal.key_id,
                session_id=body.session_id, project_id=body.project_id, agent_id=agent, tool=body.tool,
                command=body.command, preapproved=settings.preapproved_tools,
                budget_s=settings.permission_eval_budget_s, max_rules=2 * settings.permission_max_rules_per_tool,
                max_matching=settings.permission_max_matching_per_tenant, policy=policy,
            )  # fmt: skip
    except EvaluationsBusy as exc:
        raise ApiError(
            429, "evaluations_busy", f"{exc}; retry in {BUSY_RETRY_AFTER_S} s",
            headers={"Retry-After": str(BUSY_RETRY_AFTER_S)},
        ) from exc  # fmt: skip
    verdict = evaluation.verdict
    state.metrics.permission_decisions.labels(decision=verdict.decision, tier=verdict.tier).inc()
    state.metrics.count_redactions(evaluation.redactions, stage="audit")
    return EvaluateOut(
        decision=verdict.decision, tier=verdict.tier, reason=verdict.reason, rule_id=verdict.rule_id,
        grant_id=verdict.grant_id,
    )  # fmt: skip


@router.post(
    "/v1/permissions/allow-once",
    response_model=AllowOnceOut,
    status_code=201,
    summary="Let this exact command run once in this session and project, for one agent or any"
    " (a human's confirmation)",
)
async def allow_once(
    state: Gateway, body: AllowOnceIn, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> AllowOnceOut:
    _refuse_in_command(body)
    await _refuse_identifiers(
        state, principal, session_id=body.session_id, project_id=body.project_id, agent_id=body.agent_id,
        tool=body.tool,
    )  # fmt: skip
    ttl = state.settings.allow_once_ttl_s
    grant = await grant_once(
        state.redis, tenant_id=principal.tenant_id, session_id=body.session_id, project_id=body.project_id,
        agent_id=body.agent_id, tool=body.tool, command=body.command, ttl_s=ttl,
    )  # fmt: skip
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.allow_once",
            subject=body.session_id,
            detail={"tool": body.tool, "command_sha256": command_hash(body.tool, body.command),
                    "project_id": body.project_id, "agent_id": body.agent_id, "grant_id": str(grant), "ttl_s": ttl},
        )  # fmt: skip
    return AllowOnceOut(grant_id=grant, expires_in_s=ttl)


@router.post(
    "/v1/permissions/rules",
    response_model=RuleOut,
    status_code=201,
    summary="Add a rule",
    responses={409: {"model": ErrorOut, "description": "The tool's (in this scope) or the tenant's rule limit"}},
)
async def add_rule(
    state: Gateway, body: RuleIn, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> RuleOut:
    refuse_control_characters(
        "body", tool=body.tool, pattern=body.pattern, description=body.description, project_id=body.project_id
    )
    policy = await _refuse_identifiers(state, principal, project_id=body.project_id, tool=body.tool)
    settings = state.settings
    try:
        validate_pattern(body.pattern)
    except PatternError as exc:
        raise ApiError(422, "invalid_pattern", str(exc)) from exc
    detail, redactions = rule_audit_detail(**body.model_dump(), policy=policy)
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        await lock_rules(conn, principal.tenant_id)
        in_scope, in_tenant = await count_rules(conn, tool=body.tool, project_id=body.project_id)
        if in_scope >= settings.permission_max_rules_per_tool:
            scope = f"project {body.project_id}" if body.project_id else "the global rules"
            raise ApiError(
                409, "rule_limit",
                f"{body.tool} already has {in_scope} rules in {scope}; the limit is "
                f"{settings.permission_max_rules_per_tool} per tool and scope (remove one first)",
            )  # fmt: skip
        if in_tenant >= settings.permission_max_rules_per_tenant:
            raise ApiError(
                409, "rule_limit",
                f"the tenant already has {in_tenant} rules; the limit is {settings.permission_max_rules_per_tenant}"
                " (remove one first)",
            )  # fmt: skip
        # The description is stored as redacted as it is audited (the pattern is stored as
        # written: it is what matches).
        stored = {**body.model_dump(), "description": detail["description"]}
        rule = await insert_rule(conn, tenant_id=principal.tenant_id, **stored)
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.rule.create",
            subject=str(rule.rule_id), detail=detail,
        )  # fmt: skip
    state.metrics.count_redactions(redactions, stage="audit")
    return RuleOut(**rule.__dict__)


@router.get("/v1/permissions/rules", response_model=RulesOut, summary="The tenant's rules, in order")
async def get_rules(
    state: Gateway,
    principal: Annotated[Principal, Depends(scoped("read"))],
    tool: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
) -> RulesOut:
    refuse_control_characters("query", tool=tool)
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        rules = await list_rules(conn, tool=tool)
    return RulesOut(rules=[RuleOut(**r.__dict__) for r in rules])


@router.delete(
    "/v1/permissions/rules/{rule_id}",
    status_code=204,
    responses={404: {"model": ErrorOut, "description": "No such rule for this tenant"}},
    summary="Remove a rule",
)
async def remove_rule(
    state: Gateway, rule_id: uuid.UUID, principal: Annotated[Principal, Depends(scoped("admin", tenant_wide=True))]
) -> Response:
    async with tenant_transaction(state.pool, principal.tenant_id, actor=principal.key_id) as conn:
        if not await delete_rule(conn, rule_id):
            raise ApiError(404, "not_found", "no such rule for this tenant")
        await append_audit(
            conn, tenant_id=principal.tenant_id, actor=principal.key_id, action="permission.rule.delete",
            subject=str(rule_id),
        )  # fmt: skip
    return Response(status_code=204)
