"""``/healthz`` (the process is up) and ``/readyz`` (every dependency answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import JSONResponse, PlainTextResponse, Response

from agents_gateway.models import CheckOut, ReadyOut
from agents_gateway.state import GatewayState
from streams.heartbeat import live_workers, memory_app_name

router = APIRouter(tags=["health"])
CHECK_TIMEOUT_S = 2.0


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
    responses={503: {"model": ReadyOut, "description": "A dependency is not reachable"}},
    summary="Readiness: broker, Postgres, Redis and a worker are reachable",
)
async def readyz(request: Request) -> JSONResponse:
    state: GatewayState = request.app.state.gateway

    async def postgres() -> str:
        async with state.pool.connection(timeout=CHECK_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")
        return "ok"

    async def redis() -> str:
        await state.redis.ping()
        return "ok"

    async def worker() -> str:
        n = await live_workers(state.redis, app_id=state.settings.app_id)
        if n == 0:
            raise RuntimeError("no ingest worker has announced assigned partitions recently")
        return f"{n} worker(s) consuming"

    async def memory_worker() -> str:
        n = await live_workers(state.redis, app_id=memory_app_name(state.settings.app_id))
        if n == 0:
            raise RuntimeError("no long-term memory worker (`memstream worker --memory`) is consuming")
        return f"{n} worker(s) consuming; {state.memory_models}"

    names = ("broker", "postgres", "redis", "worker", "memory_worker")
    probes = (state.producer.check, postgres, redis, worker, memory_worker)
    results = await asyncio.gather(*(_run_check(p) for p in probes))
    checks = dict(zip(names, results, strict=True))
    ready = all(c.ok for c in checks.values())
    body = ReadyOut(status="ready" if ready else "not ready", checks=checks)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if ready else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics of this gateway process",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Prometheus text"}},
)
async def metrics(request: Request) -> Response:
    state: GatewayState = request.app.state.gateway
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
