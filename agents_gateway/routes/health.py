"""``/healthz`` (the process is up) and ``/readyz`` (every dependency answers)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import JSONResponse, PlainTextResponse, Response

from agents_gateway.models import CheckOut, ReadyOut
from agents_gateway.state import Gateway
from streams.defects import recorded_defect
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
async def readyz(state: Gateway) -> JSONResponse:
    async def postgres() -> str:
        async with state.pool.connection(timeout=CHECK_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")
        return "ok"

    async def redis() -> str:
        await state.redis.ping()
        return "ok"

    async def worker() -> str:
        app_id = state.settings.app_id
        n, defect = await asyncio.gather(live_workers(state.redis, app_id=app_id), recorded_defect(state.redis, app_id))
        if defect is not None:
            raise RuntimeError(_defect_detail(defect))
        if n == 0:
            raise RuntimeError("no ingest worker has announced assigned partitions recently")
        return f"{n} worker(s) consuming"

    async def memory_worker() -> str:
        app_id = memory_app_name(state.settings.app_id)
        n, defect = await asyncio.gather(live_workers(state.redis, app_id=app_id), recorded_defect(state.redis, app_id))
        if defect is not None:
            raise RuntimeError(_defect_detail(defect))
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


def _defect_detail(record: dict[str, object]) -> str:
    """What ``/readyz`` says of a code defect that stopped a worker (until a batch goes through):
    the agent, the stage and the error's type — never its message or where, which may name a
    tenant's data (the worker's log has them)."""
    error = str(record.get("error", "")).split(":", 1)[0]
    return (
        f"code defect in agent {record.get('consumer')!s}, stage {record.get('what')!s}: {error}; the worker"
        f" stopped at {record.get('at')!s} (its log says where) and consumes the batch again after the restart"
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics of this gateway process",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Prometheus text"}},
)
async def metrics(state: Gateway) -> Response:
    return Response(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
