"""``POST /v1/turns``: validate, publish to Kafka, answer 202 once the broker acknowledged."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from agents_gateway.auth import SYSTEM_SCOPE, Principal, scoped
from agents_gateway.errors import ApiError, validation_details
from agents_gateway.models import ErrorOut, TurnBatchIn, TurnIn, TurnsAccepted
from agents_gateway.state import Gateway, GatewayState
from memstream.privacy import (
    DEFAULT_POLICY,
    IDENTIFIER_FIELDS,
    PrivacyPolicy,
    TurnText,
    grown_past_limits,
    identifier_problems,
    redact_turn,
)
from schemas.topics import TURNS
from schemas.turns import problems

router = APIRouter(tags=["turns"])

REQUEST_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": "#/components/schemas/TurnIn"},
                    {"$ref": "#/components/schemas/TurnBatchIn"},
                ]
            }
        }
    },
}


async def read_body(request: Request, *, limit: int) -> bytes:
    """The request body, refusing (413) to buffer more than ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "payload_too_large", f"body of {declared} bytes exceeds the limit of {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "payload_too_large", f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_turns(data: Any, *, max_batch: int) -> list[TurnIn]:
    try:
        if isinstance(data, dict) and "turns" in data:
            turns = TurnBatchIn.model_validate(data).turns
            if len(turns) > max_batch:
                raise ApiError(
                    413,
                    "batch_too_large",
                    f"batch of {len(turns)} turns exceeds the limit of {max_batch}",
                )
            return turns
        if isinstance(data, dict):
            return [TurnIn.model_validate(data)]
    except ValidationError as exc:
        details = validation_details(exc.errors())
        message = "; ".join(f"{'.'.join(d['loc']) or 'body'}: {d['msg']}" for d in details)
        raise ApiError(422, "invalid_turn", message, details=details) from exc
    raise ApiError(422, "invalid_turn", 'body must be a turn object or {"turns": [turn, ...]}')


def to_records(turns: list[TurnIn], *, now: datetime, principal: Principal) -> list[dict[str, Any]]:
    """Avro-ready records for the caller's tenant (and agent, for an agent-bound key); turns
    without a time get the gateway's clock, 1 µs apart, in order."""
    records = []
    for i, turn in enumerate(turns):
        when = turn.event_time.astimezone(UTC) if turn.event_time else now + timedelta(microseconds=i)
        agent = principal.check_agent(turn.agent_id)
        if turn.role == "system" and SYSTEM_SCOPE not in principal.scopes:
            raise ApiError(
                403, "missing_scope",
                f"turn {i}: role 'system' speaks for the operator; this key lacks the '{SYSTEM_SCOPE}' scope",
            )  # fmt: skip
        if agent is None:
            message = "agent_id is required (this key is not bound to an agent)"
            raise ApiError(
                422, "invalid_turn", f"turn {i}: {message}",
                details=[{"loc": ["turns", str(i), "agent_id"], "msg": message, "type": "missing"}],
            )  # fmt: skip
        records.append(
            {
                "event_id": str(turn.event_id or uuid.uuid4()),
                "tenant_id": principal.check_tenant(turn.tenant_id),
                "agent_id": agent,
                "user_id": turn.user_id,
                "project_id": turn.project_id,
                "session_id": turn.session_id,
                "role": turn.role,
                "content": turn.content,
                "event_time": when,
                "tool_name": turn.tool_name,
                "tool_status": turn.tool_status,
                "tags": turn.tags,
                "metadata": turn.metadata,
                "shared": turn.shared,
            }
        )
    return records


#: Text (characters, all of a request's turns together) above which the privacy filter runs
#: on a worker thread rather than on the event loop: linear, but 4 MiB of it is still tens of
#: milliseconds that other requests (``/healthz`` included) would otherwise wait through.
OFF_LOOP_CHARS = 64 * 1024


def _text_chars(records: Sequence[Mapping[str, Any]]) -> int:
    total = 0
    for record in records:
        total += len(record["content"]) + len(record.get("tool_name") or "")
        total += sum(map(len, record.get("tags") or ()))
        total += sum(len(k) + len(v) for k, v in (record.get("metadata") or {}).items())
    return total


def _turns_loc(i: int) -> list[str]:
    return ["turns", str(i)]


async def publish_records(
    state: GatewayState,
    principal: Principal,
    records: list[dict[str, Any]],
    *,
    policy: PrivacyPolicy | None = None,
    code: str = "invalid_turn",
    loc: Callable[[int], list[str]] = _turns_loc,
) -> None:
    """The privacy filter with the tenant's policy (off the event loop for a large request),
    then the turn contract's limits checked again on what the filter made — a field that
    redaction pushed past its limit is a 422 naming it, never cut — then Kafka (waiting for
    the broker's ack)."""
    claimed = await state.event_claims.claim(principal.tenant_id, records, received_at=datetime.now(UTC))
    if conflicts := claimed.refused:
        message = (
            "this event id was already used for another turn (an event id names one turn; a retry sends it unchanged)"
        )
        raise ApiError(
            409, "event_id_conflict", f"{len(conflicts)} turn(s): {message}",
            details=[{"loc": [*loc(i), "event_id"], "msg": message, "type": "conflict"} for i in conflicts],
        )  # fmt: skip
    if policy is None:
        policy = await state.policies.get(principal.tenant_id)
    limit = state.settings.max_content_chars
    if _text_chars(records) > OFF_LOOP_CHARS:
        found, grown = await asyncio.to_thread(redact_records, records, policy, max_content_chars=limit)
    else:
        found, grown = redact_records(records, policy, max_content_chars=limit)
    if grown:
        details = [
            {"loc": [*loc(i), *where], "msg": message, "type": "grown_by_redaction"} for i, where, message in grown
        ]
        message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details)
        raise ApiError(422, code, message, details=details)
    state.metrics.count_redactions(found, stage="gateway")
    await state.producer.publish(records, received_at=claimed.received_at)
    state.metrics.turns_accepted.inc(len(records))
    state.metrics.events_out.labels(topic=TURNS).inc(len(records))


def redact_records(
    records: list[dict[str, Any]], policy: PrivacyPolicy, *, max_content_chars: int
) -> tuple[Counter[str], list[tuple[int, tuple[str, ...], str]]]:
    """Apply the privacy filter to every free-text field of every record (content, tool
    name, tags, metadata keys and values), in place. Returns what was found, and (record,
    field, why) for each field that redaction made longer than the turn contract allows:
    the caller refuses those, nothing is truncated. Identifiers are checked, not rewritten
    (``secret_identifier_details``)."""
    found: Counter[str] = Counter()
    grown: list[tuple[int, tuple[str, ...], str]] = []
    for i, record in enumerate(records):
        before = TurnText(
            record["content"], record.get("tool_name"), tuple(record.get("tags") or ()), record.get("metadata") or {}
        )
        text, counts = redact_turn(
            before.content, tool_name=before.tool_name, tags=before.tags, metadata=before.metadata, policy=policy
        )
        if counts:
            grown.extend(
                (i, where, why) for where, why in grown_past_limits(before, text, max_content_chars=max_content_chars)
            )
        record["content"], record["tool_name"] = text.content, text.tool_name
        record["tags"], record["metadata"] = list(text.tags), text.metadata
        found.update(counts)
    return found, grown


def secret_identifier_details(
    records: list[dict[str, Any]], policy: PrivacyPolicy = DEFAULT_POLICY
) -> list[dict[str, Any]]:
    """422 details for every identifier that carries a secret (or, under the tenant's policy,
    is or contains an e-mail address or a phone number): refused, never rewritten (an id must
    stay stable), naming the field and the kind but not the value."""
    return [
        {"loc": ["turns", str(i), field], "msg": message, "type": "secret_in_identifier"}
        for i, record in enumerate(records)
        for field, message in identifier_problems(record, policy)
    ]


async def refuse_identifiers(
    state: GatewayState,
    tenant_id: str,
    values: Mapping[str, str | None],
    *,
    where: str = "body",
    code: str = "invalid_request",
    policy: PrivacyPolicy | None = None,
) -> PrivacyPolicy:
    """422 naming every identifier among ``values`` (session_id, project_id, tool, …) that
    carries a secret or, under the tenant's policy, personal data: the rule turns follow, for
    every other endpoint that stores or audits an identifier. Returns the tenant's policy."""
    if policy is None:
        policy = await state.policies.get(tenant_id)
    refused = identifier_problems(values, policy, fields=tuple(values) or IDENTIFIER_FIELDS)
    if refused:
        raise ApiError(
            422, code, "; ".join(message for _, message in refused),
            details=[{"loc": [where, f], "msg": m, "type": "secret_in_identifier"} for f, m in refused],
        )  # fmt: skip
    return policy


@router.post(
    "/v1/turns",
    status_code=202,
    response_model=TurnsAccepted,
    openapi_extra={"requestBody": REQUEST_BODY},
    responses={
        400: {"model": ErrorOut, "description": "Malformed JSON"},
        409: {"model": ErrorOut, "description": "An event id already names another turn"},
        413: {"model": ErrorOut, "description": "Body or batch too large"},
        401: {"model": ErrorOut, "description": "No, or an invalid, API key"},
        403: {"model": ErrorOut, "description": "Key lacks 'ingest', or a turn names another tenant/agent"},
        415: {"model": ErrorOut, "description": "Not JSON"},
        422: {"model": ErrorOut, "description": "A turn breaks the contract"},
        429: {"model": ErrorOut, "description": "Rate limit of the key exceeded (see Retry-After)"},
        503: {
            "model": ErrorOut,
            "description": "Broker unavailable; retry with the same event ids",
        },
    },
    summary="Publish one turn or a batch",
)
async def post_turns(
    state: Gateway, request: Request, principal: Annotated[Principal, Depends(scoped("ingest"))]
) -> TurnsAccepted:
    settings = state.settings
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    body = await read_body(request, limit=settings.max_body_bytes)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, "malformed_json", f"body is not valid JSON: {exc}") from exc
    turns = parse_turns(data, max_batch=settings.max_batch_turns)
    now = datetime.now(UTC)
    records = to_records(turns, now=now, principal=principal)
    details = []
    for i, record in enumerate(records):
        for problem in problems(record, max_content_chars=settings.max_content_chars, now=now):
            details.append({"loc": ["turns", str(i)], "msg": problem, "type": "contract"})
    policy = await state.policies.get(principal.tenant_id)
    details.extend(secret_identifier_details(records, policy))
    if details:
        message = "; ".join(f"turn {d['loc'][1]}: {d['msg']}" for d in details)
        raise ApiError(422, "invalid_turn", message, details=details)
    await publish_records(state, principal, records, policy=policy)
    return TurnsAccepted(accepted=len(records), event_ids=[uuid.UUID(r["event_id"]) for r in records])
