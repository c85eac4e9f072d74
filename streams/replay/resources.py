"""What a replay writes with: the long-term memory worker's resources, without the broker.

The pool connects as the owner role (a replay also creates and switches tables) and, for a
rebuild into fresh tables, puts the shadow schema first on its ``search_path``, so the sinks'
SQL lands there unchanged.
"""

from __future__ import annotations

import logging
from typing import Any

from psycopg_pool import AsyncConnectionPool

from memstream.embedder import build_embedder
from memstream.extraction.factory import build_models
from memstream.settings import Settings
from sinks.postgres.migrate import check_schema, check_text_search_config
from sinks.postgres.pool import create_pool
from streams.resources import MemoryResources

log = logging.getLogger(__name__)


class ReplayResources(MemoryResources):
    def __init__(self, settings: Settings, *, database_url: str, search_path: str | None, **kwargs: Any) -> None:
        self._database_url = database_url
        self._search_path = search_path
        super().__init__(settings, **kwargs)

    def _create_pool(self) -> AsyncConnectionPool:
        return create_pool(
            self._database_url, name="replay", min_size=2, max_size=6,
            text_search_config=self.settings.text_search_config, search_path=self._search_path,
        )  # fmt: skip

    async def on_start(self) -> None:
        """Open the pool and the models (no topics: a replay reads Postgres, not the broker)."""
        self._embedder = build_embedder(self.settings, cache_without_tenant=False)  # batches: embed_owned
        await self.pool.open(wait=True, timeout=30)
        async with self.pool.connection() as conn:
            await check_schema(conn)
            await check_text_search_config(conn, self.settings.text_search_config)
        self._models = build_models(self.settings)
        log.info("replaying with %s, embedding with %s", self._models.description, self._embedder.model_name)
