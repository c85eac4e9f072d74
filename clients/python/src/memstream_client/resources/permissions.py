"""``client.permissions`` (may this command run?) and ``client.rules`` (the tenant's rules)."""

from __future__ import annotations

import uuid

from memstream_client.encoding import query_params
from memstream_client.endpoint import RequestParts, endpoint
from memstream_client.models.permissions import (
    AllowOnceRequest,
    Evaluation,
    Grant,
    PermissionRequest,
    Rule,
    RuleRequest,
    Rules,
)
from memstream_client.resource import AsyncMethod, AsyncResource, SyncMethod, SyncResource
from memstream_client.types import Effect


@endpoint("POST", "/v1/permissions/evaluate", body=PermissionRequest, response=Evaluation)
def evaluate(
    *, session_id: str, tool: str, command: str, project_id: str | None = None, agent_id: str | None = None
) -> RequestParts:
    """May ``tool`` run ``command``? ALLOW, BLOCK or PENDING (ask a person), with the tier and
    the rule or grant that decided. Consumes a matching allow-once grant, so it is not
    retried once it may have reached the gateway."""
    body = PermissionRequest.model_validate(
        _given(session_id=session_id, tool=tool, command=command, project_id=project_id, agent_id=agent_id)
    )
    return RequestParts(json=body.to_json())


@endpoint("POST", "/v1/permissions/allow-once", body=AllowOnceRequest, response=Grant)
def allow_once(
    *, session_id: str, tool: str, command: str, project_id: str | None = None, agent_id: str | None = None
) -> RequestParts:
    """Let exactly this command run once in this session and project (a person's
    confirmation); with ``agent_id``, only for that agent. Needs an admin key not bound to an
    agent."""
    body = AllowOnceRequest.model_validate(
        _given(session_id=session_id, tool=tool, command=command, project_id=project_id, agent_id=agent_id)
    )
    return RequestParts(json=body.to_json())


@endpoint("POST", "/v1/permissions/rules", body=RuleRequest, response=Rule)
def create_rule(
    *,
    tool: str,
    effect: Effect,
    pattern: str,
    project_id: str | None = None,
    position: int | None = None,
    description: str | None = None,
) -> RequestParts:
    """Add a rule: ``effect`` (ALLOW or BLOCK) for ``tool`` when ``pattern`` (RE2) is found in
    the command; in ``project_id``, or global without one. Rules apply in ``position`` order."""
    body = RuleRequest.model_validate(
        _given(
            tool=tool,
            effect=effect,
            pattern=pattern,
            project_id=project_id,
            position=position,
            description=description,
        )
    )
    return RequestParts(json=body.to_json())


@endpoint("GET", "/v1/permissions/rules", response=Rules)
def list_rules(*, tool: str | None = None) -> RequestParts:
    """The tenant's rules, in order (only ``tool``'s, if given)."""
    return RequestParts(query=query_params(tool=tool))


@endpoint("DELETE", "/v1/permissions/rules/{rule_id}", response=None)
def delete_rule(rule_id: uuid.UUID | str) -> RequestParts:
    """Remove a rule (``NotFoundError`` if the tenant has none of that id: also when a retry
    follows an attempt that did remove it)."""
    return RequestParts(path_params={"rule_id": str(rule_id)})


def _given(**values: object) -> dict[str, object]:
    """The arguments that were given (None: left to the gateway's default)."""
    return {name: value for name, value in values.items() if value is not None}


class Permissions(SyncResource):
    evaluate = SyncMethod(evaluate)
    allow_once = SyncMethod(allow_once)


class AsyncPermissions(AsyncResource):
    evaluate = AsyncMethod(evaluate)
    allow_once = AsyncMethod(allow_once)


class RulesResource(SyncResource):
    create = SyncMethod(create_rule)
    list = SyncMethod(list_rules)
    delete = SyncMethod(delete_rule)


class AsyncRulesResource(AsyncResource):
    create = AsyncMethod(create_rule)
    list = AsyncMethod(list_rules)
    delete = AsyncMethod(delete_rule)
