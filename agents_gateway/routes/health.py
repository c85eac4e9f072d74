"""Probes: ``/healthz`` (the process is up), ``/readyz`` (this gateway can serve: the broker,
Postgres and Redis answer) and ``/readyz/workers`` (each worker role consumes, and none stopped
on a code defect).

Readiness is the gateway's own: an orchestrator takes a gateway out of its load balancer on a
``/readyz`` 503, and a worker that is down is no reason for that — turns are still accepted
(the broker keeps them until a worker consumes them) and reads still answer. Whether the
workers run is a signal of its own, per role, for the operator's monitoring: a deployment with
ingest workers only asks ``/readyz/workers?role=ingest``. A code defect that stopped a worker
is never a silent stall: ``/readyz/workers`` answers 503 and names the agent and stage, whatever
roles were asked for, until a batch goes through (the worker's log says where; the restarted
worker's ``/metrics`` has ``memstream_code_defect``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Query
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError
from starlette.responses import JSONResponse, PlainTextResponse, Response

from agents_gateway.models import CheckOut, ErrorOut, ReadyOut, WorkerRoleOut, WorkersOut
from agents_gateway.state import Gateway, GatewayState
from streams.defects import recorded_defect
from streams.heartbeat import WORKER_ROLES, WorkerRole, assignments, role_app_name

router = APIRouter(tags=["health"])
CHECK_TIMEOUT_S = 2.0

#: How to start a worker of each role (what an absent role's detail suggests).
_START = {"ingest": "memstream worker", "memory": "memstream worker --memory"}


@router.get("/healthz", summary="Liveness: the gateway process answers")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _run_check(probe: Callable[[], Awaitable[str]]) -> CheckOut:
    try:
        detail = await asyncio.wait_for(probe(), timeout=CHECK_TIMEOUT_S)
    except TimeoutError:
        return CheckOut(ok=False, detail=f"no answer within {CHECK_TIMEOUT_S:.0f} s")
    except Exception as exc:
        return CheckOut(ok=False, detail=f"{type(exc).__name__}: {exc}")
    return CheckOut(ok=True, detail=detail)


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ReadyOut, "description": "The broker, Postgres or Redis is not reachable"}},
    summary="Readiness: this gateway can serve (broker, Postgres and Redis answer)",
)
async def readyz(state: Gateway) -> JSONResponse:
    """Workers are not checked here: ``/readyz/workers`` reports them."""

    async def postgres() -> str:
        async with state.pool.connection(timeout=CHECK_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")
        return "ok"

    async def redis() -> str:
        await state.redis.ping()
        return "ok"

    names = ("broker", "postgres", "redis")
    probes = (state.producer.check, postgres, redis)
    results = await asyncio.gather(*(_run_check(p) for p in probes))
    checks = dict(zip(names, results, strict=True))
    ready = all(c.ok for c in checks.values())
    body = ReadyOut(status="ready" if ready else "not ready", checks=checks)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if ready else 503)


@router.get(
    "/readyz/workers",
    response_model=WorkersOut,
    responses={
        503: {
            "model": WorkersOut,
            "description": "A role asked for has no live worker, a worker stopped on a code defect, or Redis"
            " did not answer",
        },
        422: {"model": ErrorOut, "description": "An unknown role"},
    },
    summary="The workers: each role consumes, and none stopped on a code defect",
)
async def workers_ready(
    state: Gateway,
    role: Annotated[
        list[WorkerRole] | None,
        Query(description="The roles that must have a live worker (repeatable); default: every role"),
    ] = None,
) -> JSONResponse:
    """200 when every role asked for has a worker holding partitions and no worker of any role
    stopped on a code defect; 503 otherwise. Every role is reported either way."""
    required = set(role or WORKER_ROLES)
    found = await asyncio.gather(*(_role_state(state, r, required=r in required) for r in WORKER_ROLES))
    roles: dict[str, WorkerRoleOut] = dict(zip(WORKER_ROLES, found, strict=True))
    ready = all(_role_ready(r) for r in roles.values())
    body = WorkersOut(status="ready" if ready else "not ready", roles=roles)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if ready else 503)


def _role_ready(role: WorkerRoleOut) -> bool:
    return role.state == "consuming" or (role.state == "absent" and not role.required)


async def _role_state(state: GatewayState, role: WorkerRole, *, required: bool) -> WorkerRoleOut:
    app_id = role_app_name(state.settings.app_id, role)
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            held, defect = await asyncio.gather(
                assignments(state.redis, app_id=app_id), recorded_defect(state.redis, app_id)
            )
    except TimeoutError:
        return WorkerRoleOut(
            state="unknown", required=required, workers=0, partitions=0,
            detail=f"Redis gave no answer within {CHECK_TIMEOUT_S:.0f} s",
        )  # fmt: skip
    except (RedisError, OSError) as exc:
        return WorkerRoleOut(
            state="unknown", required=required, workers=0, partitions=0, detail=f"Redis: {type(exc).__name__}: {exc}"
        )
    workers, partitions = len(held), len({p for ps in held.values() for p in ps})
    if defect is not None:
        return WorkerRoleOut(
            state="stopped_on_defect", required=required, workers=workers, partitions=partitions,
            detail=_defect_detail(defect),
        )  # fmt: skip
    if workers == 0:
        ttl = state.settings.worker_heartbeat_ttl_s
        detail = f"no {role} worker (`{_START[role]}`) announced assigned partitions in the last {ttl:g} s"
        return WorkerRoleOut(state="absent", required=required, workers=0, partitions=0, detail=detail)
    detail = f"{workers} worker(s) consuming {partitions} partition(s)"
    if role == "memory":
        detail += f"; {state.memory_models}"
    return WorkerRoleOut(state="consuming", required=required, workers=workers, partitions=partitions, detail=detail)


def _defect_detail(record: dict[str, object]) -> str:
    """What ``/readyz/workers`` says of a code defect that stopped a worker (until a batch goes
    through): the agent, the stage and the error's type — never its message or where, which may
    name a tenant's data (the worker's log has them)."""
    error = str(record.get("error", "")).split(":", 1)[0]
    return (
        f"code defect in agent {record.get('consumer')!s}, stage {record.get('what')!s}: {error}; the worker"
        f" stopped at {record.get('at')!s} (its log says where) and consumes the batch again after the restart"
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics of this gateway (every process of it together)",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Prometheus text"},
        401: {"model": ErrorOut, "description": "MEMSTREAM_OPS_TOKEN is set and the request does not carry it"},
    },
)
async def metrics(state: Gateway) -> Response:
    return Response(generate_latest(state.metrics.exposed), media_type=CONTENT_TYPE_LATEST)
