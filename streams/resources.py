"""What the agents write with: opened when the worker starts, closed when it stops."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from wsgiref.simple_server import WSGIServer

import redis.asyncio as aioredis
from mode import Service
from psycopg_pool import AsyncConnectionPool

from memstream.embedder import Embedder, build_embedder
from memstream.embedder.base import CachedEmbedder
from memstream.extraction.factory import MemoryModels, build_models
from memstream.metrics import CacheCollector, CacheStats, LLMCollector
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from sinks.errors import SchemaNotReadyError
from sinks.postgres.migrate import check_schema, check_text_search_config
from sinks.postgres.pool import create_pool
from sinks.postgres.tenant_settings import PolicyCache
from sinks.redis.buffer import session_buffers
from sinks.redis.client import redis_client
from streams.metrics import WorkerMetrics, serve_metrics
from streams.retry import Backoff, retry_until_done
from streams.topics import ensure_topics

log = logging.getLogger(__name__)


class PipelineResources(Service):
    """The Postgres pool, the Redis client, the embedder and the tokenizer of one worker."""

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.metrics = WorkerMetrics()
        self.backoff = Backoff(
            initial_s=settings.retry_initial_s, max_s=settings.retry_max_s, on_retry=self.metrics.count_retry,
            defect_attempts=settings.defect_attempts,
        )  # fmt: skip
        self.pool: AsyncConnectionPool = self._create_pool()
        self.redis: aioredis.Redis = redis_client(
            settings.require_redis_url(), max_connections=settings.redis_max_connections,
            pool_timeout_s=settings.redis_pool_timeout_s, socket_timeout_s=10, connect_timeout_s=5,
        )  # fmt: skip
        self.buffers = session_buffers(self.redis, settings)
        self.tokens = TokenCounter(remember_untenanted=False)  # a batch names its texts' tenants (count_owned)
        self.policies = PolicyCache(self.pool)
        self._embedder: Embedder | None = None
        self.metrics.registry.register(CacheCollector(self._caches))
        self._metrics_server: WSGIServer | None = None

    def _create_pool(self) -> AsyncConnectionPool:
        return create_pool(
            self.settings.require_database_url(), name="worker", min_size=2, max_size=6,
            text_search_config=self.settings.text_search_config,
        )  # fmt: skip

    def _caches(self) -> dict[str, CacheStats | None]:
        embedder = self._embedder
        return {
            "embedding": embedder if isinstance(embedder, CachedEmbedder) else None,
            "tenant_settings": self.policies,
        }

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            raise RuntimeError("the embedder is opened in on_start")
        return self._embedder

    async def on_start(self) -> None:
        if self.settings.worker_metrics_port >= 0:  # first: a worker waiting on a store is worth watching
            self._metrics_server = serve_metrics(
                self.metrics.registry, host=self.settings.worker_metrics_host, port=self.settings.worker_metrics_port
            )
        await retry_until_done(
            lambda: ensure_topics(
                self.settings.require_kafka(),
                security=self.settings.kafka_security(),
                partitions=self.settings.topic_partitions,
                replication_factor=self.settings.topic_replication_factor,
            ),
            what="creating topics",
            backoff=self.backoff,
        )
        self._embedder = build_embedder(self.settings, cache_without_tenant=False)  # batches: embed_owned
        await self.pool.open(wait=False)

        async def schema_ready() -> None:
            async with self.pool.connection() as conn:
                await check_schema(conn)
                await check_text_search_config(conn, self.settings.text_search_config)

        # A database that is down is waited for; one that is not migrated fails loudly.
        await retry_until_done(
            schema_ready,
            what="checking the database schema",
            backoff=self.backoff,
            fatal=(SchemaNotReadyError,),
        )
        log.info("worker resources ready (embedding with %s)", self.embedder.model_name)

    async def on_stop(self) -> None:
        try:
            await self.pool.close()
        finally:
            await self.redis.aclose()
            if self._embedder is not None:
                await self._embedder.aclose()
            if self._metrics_server is not None:
                await asyncio.to_thread(self._metrics_server.shutdown)  # waits out its poll (<= 0.5 s)
                self._metrics_server.server_close()


class MemoryResources(PipelineResources):
    """The long-term memory worker's resources: the ingest worker's, plus the models that
    extract facts and write summaries (Gemini, or the offline fallback)."""

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self._models: MemoryModels | None = None
        self.metrics.registry.register(LLMCollector(lambda: [self._models.llm if self._models else None]))

    @property
    def models(self) -> MemoryModels:
        if self._models is None:
            raise RuntimeError("the models are opened in on_start")
        return self._models

    async def on_start(self) -> None:
        await super().on_start()
        self._models = build_models(self.settings)
        log.info("long-term memory with %s", self._models.description)

    async def on_stop(self) -> None:
        try:
            if self._models is not None:
                await self._models.aclose()
        finally:
            await super().on_stop()
