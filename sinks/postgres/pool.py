"""Connection pools: opened in a lifespan / on_start, closed in a finally."""

from __future__ import annotations

from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool

from sinks.errors import SchemaNotReadyError


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    try:
        await register_vector_async(conn)
    except psycopg.ProgrammingError as exc:
        raise SchemaNotReadyError(
            "vector type not found in the database: the pgvector extension is missing "
            "(run `memstream migrate` as a role allowed to CREATE EXTENSION vector)"
        ) from exc


def create_pool(
    url: str,
    *,
    name: str,
    min_size: int = 1,
    max_size: int = 8,
    text_search_config: str = "english",
    search_path: str | None = None,
) -> AsyncConnectionPool:
    """A pool (not yet open) whose connections know the ``vector`` type and index new rows'
    text in ``text_search_config`` unless their tenant chose another (migration 0005).
    ``search_path`` (schema names) points unqualified table names elsewhere: a replay writes
    the same SQL into its shadow tables."""
    options = f"-c memstream.text_search_config={text_search_config}"
    if search_path is not None:
        options += f" -c search_path={search_path}"
    return AsyncConnectionPool(
        url,
        name=name,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=_configure,
        kwargs={
            "application_name": f"memstream-{name}",
            "options": options,
        },
        reconnect_timeout=float("inf"),
    )
