"""The gateway: a thin ASGI service over the pipeline (ingest and reads)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from agents_gateway.auth import Authenticator
from agents_gateway.errors import install_error_handlers
from agents_gateway.limits import RequestGuard, configure_protocol
from agents_gateway.mcp import mount_mcp
from agents_gateway.metrics import MULTIPROCESS_DIR, GatewayMetrics, RequestTimer
from agents_gateway.models import TurnBatchIn, TurnIn
from agents_gateway.openapi import complete
from agents_gateway.producer import TurnProducer
from agents_gateway.retrieval.access import AccessRecorder
from agents_gateway.retrieval.recent import RecentSearches
from agents_gateway.routes import (
    context,
    explorer,
    health,
    memories,
    memory,
    permissions,
    search,
    sessions,
    tenant,
    turns,
    ui,
    users,
)
from agents_gateway.state import GatewayState
from memstream.embedder import Embedder, build_embedder
from memstream.embedder.base import CachedEmbedder
from memstream.extraction.factory import build_llm, describe_models
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from schemas.codec import turn_event_codec
from sinks.postgres.pool import create_pool
from sinks.postgres.queries.retrieval import text_match_indexable
from sinks.postgres.queries.warmup import SCANS, prime_pool
from sinks.postgres.tenant_settings import PolicyCache
from sinks.postgres.vector_index import IndexWatch
from sinks.redis.buffer import session_buffers
from sinks.redis.client import redis_client
from sinks.redis.event_claims import EventClaims
from sinks.redis.rate_limit import RateLimiter
from streams.topics import refuse_topic_auto_creation

log = logging.getLogger(__name__)

#: Every route of the gateway, in the order they are matched.
ROUTERS = tuple(
    module.router
    for module in (turns, sessions, search, context, memory, memories, explorer, permissions, tenant, users, health, ui)
)


def _cache(embedder: Embedder) -> CachedEmbedder | None:
    return embedder if isinstance(embedder, CachedEmbedder) else None


async def _warn_without_text_index(pool: AsyncConnectionPool) -> None:
    """Say once at start when full text cannot use its index (a database brought by the operator)."""
    try:
        async with pool.connection(timeout=120) as conn:
            usable = await text_match_indexable(conn)
    except (psycopg.Error, PoolTimeout) as exc:
        log.warning("could not check the full-text index: %s", exc)
        return
    if not usable:
        log.warning(
            "full-text search reads every row of the user: ts_match_vq is not leakproof in this database"
            " (a superuser can run: ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;"
            " see SECURITY.md)"
        )


#: How long priming waits for each of the pool's connections (Postgres may still be starting).
PRIME_WAIT_S = 120.0


async def _prime(pool: AsyncConnectionPool, settings: Settings, embedder: Embedder) -> None:
    """Prime the pool's connections (``sinks/postgres/queries/warmup.py``) and say how many."""
    started = time.perf_counter()
    primed = await prime_pool(
        pool, settings.gateway_pool_size, model=embedder.model_name, dim=embedder.dim,
        text_config=settings.text_search_config, timeout_s=PRIME_WAIT_S,
        scans=("exact",) if settings.vector_index == "exact" else SCANS,
    )  # fmt: skip
    log.info("primed %d of %d Postgres connections in %.2f s", primed, settings.gateway_pool_size,
             time.perf_counter() - started)  # fmt: skip


#: Net allocations of tracked objects between young-generation collections in a gateway process
#: (CPython's default: 700).
YOUNG_COLLECTION_EVERY = 10_000


def create_app(settings: Settings, *, server_process: bool = False) -> FastAPI:
    """The gateway. ``server_process``: the app is all its process serves (``memstream
    gateway``): what starting it made is then frozen out of the garbage collector's walks, and
    with ``gateway_pool_warm`` its Postgres pool opens whole and each connection is primed
    (``sinks/postgres/queries/warmup.py``); an app in a test's process opens connections as
    its requests need them."""
    configure_protocol(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm = server_process and settings.gateway_pool_warm
        pool = create_pool(
            settings.require_database_url(), name="gateway", min_size=settings.gateway_pool_size if warm else 1,
            max_size=settings.gateway_pool_size, text_search_config=settings.text_search_config,
        )  # fmt: skip
        client = redis_client(
            settings.require_redis_url(),
            max_connections=settings.redis_max_connections,
            pool_timeout_s=settings.redis_pool_timeout_s,
            socket_timeout_s=5,
            connect_timeout_s=2,
        )
        if settings.embedded_broker:  # topics are created with their partition counts, never by a metadata ask
            refuse_topic_auto_creation()
        producer = TurnProducer(
            settings.require_kafka(),
            security=settings.kafka_security(),
            codec=turn_event_codec(),
            timeout_s=settings.produce_timeout_s,
            max_request_bytes=max(settings.max_body_bytes * 2, 1024 * 1024),
            watch_cluster=settings.embedded_broker,  # it comes back empty from a restart
            topic_partitions=settings.topic_partitions if settings.embedded_broker else None,
        )
        embedder = build_embedder(settings, cache_without_tenant=False)  # every request names its tenant
        await pool.open(wait=False)
        state = app.state.gateway = GatewayState(
            settings=settings,
            producer=producer,
            pool=pool,
            redis=client,
            buffers=session_buffers(client, settings),
            event_claims=EventClaims(client, ttl_s=settings.event_claim_ttl_s),
            embedder=embedder,
            auth=Authenticator(pool, RateLimiter(client), settings),
            policies=PolicyCache(pool),
            # Several processes (ops.cli names the folder in prometheus_client's own variable).
            metrics=GatewayMetrics(
                multiprocess_dir=os.environ.get(MULTIPROCESS_DIR) if settings.gateway_workers > 1 else None
            ),
            memory_models=describe_models(settings),
            access=AccessRecorder(pool),
            tokens=TokenCounter(remember_untenanted=False),  # each request counts for its tenant (for_tenant)
            llm=build_llm(settings),
            vector_index=IndexWatch(embedder.model_name),
            searches=RecentSearches(ttl_s=settings.search_cache_s, max_entries=settings.search_cache_entries),
        )
        state.metrics.watch(
            caches=lambda: {
                "auth": state.auth,
                "tenant_settings": state.policies,
                "embedding": _cache(state.embedder),
                "search": state.searches,
            },
            llms=lambda: [state.llm],
        )
        state.access.start()
        loop = asyncio.get_running_loop()
        background = [loop.create_task(_warn_without_text_index(pool), name="text-index-check")]
        if warm:
            background.append(loop.create_task(_prime(pool, settings, embedder), name="prime-connections"))
        try:
            async with mcp.running() if mcp is not None else contextlib.nullcontext():
                if server_process:
                    # Everything made while starting (modules, schemas, routes, the models) lives
                    # as long as the process: out of the collector's sight, a full collection
                    # walks only what requests leave behind (docs/benchmarks.md). A request's
                    # objects are nearly all freed by reference counting before any collection
                    # could: a young-generation collection every 10,000 net allocations instead
                    # of 700 runs about once in 75 searches instead of twice in three.
                    gc.collect()
                    gc.freeze()
                    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
                yield
        finally:
            for task in background:
                task.cancel()
            try:
                await state.access.stop()
                if state.llm is not None:
                    await state.llm.aclose()
                await producer.close()
            finally:
                await pool.close()
                await client.aclose()
                await embedder.aclose()

    app = FastAPI(
        title="memstream gateway",
        version="1",
        summary="Long-term memory for AI agents: publish turns, read buffers, search memory.",
        description="Every /v1 endpoint needs an API key (`Authorization: Bearer msk_...` or "
        "`X-API-Key`); the tenant always comes from the key. Create keys with `memstream keys create`.",
        lifespan=lifespan,
        # Swagger UI and ReDoc load their scripts from a CDN, on the origin that serves /ui (where
        # the explorer keeps its key): off unless asked for. /openapi.json is always served.
        docs_url="/docs" if settings.gateway_docs else None,
        redoc_url="/redoc" if settings.gateway_docs else None,
        # A path with a stray slash is a 404, not a redirect: Starlette's redirect names the
        # Host header's host and would answer before any key or token is checked.
        redirect_slashes=False,
    )
    install_error_handlers(app)
    # The guard (body caps, timeouts, authentication before any body is read) runs inside the
    # timer, so that what it refuses is timed and counted too.
    app.add_middleware(RequestGuard, settings=settings)
    app.add_middleware(RequestTimer)
    for router in ROUTERS:
        app.include_router(router)
    mcp = mount_mcp(app)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (TurnIn, TurnBatchIn):
                body = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(body.pop("$defs", {}))
                components[model.__name__] = body
            app.openapi_schema = complete(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
