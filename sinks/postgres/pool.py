"""Connection pools: opened in a lifespan / on_start, closed in a finally."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg_pool import AsyncConnectionPool

from sinks.errors import SchemaNotReadyError


class VectorArrayLoader(Loader):
    """A ``vector`` read in binary, straight into a float32 array (pgvector's own loader
    builds a ``Vector`` first: a copy, a byte swap and another copy, which the read path
    paid on every candidate it fetched). Text-format reads still give ``Vector``."""

    format = Format.BINARY

    def load(self, data: Buffer) -> npt.NDArray[np.float32]:
        view = memoryview(data)
        dim = int.from_bytes(view[:2], "big")
        if len(view) != 4 + 4 * dim:
            raise ValueError(f"a binary vector of {dim} dimensions has {len(view)} bytes")
        return np.frombuffer(view, dtype=">f4", count=dim, offset=4).astype(np.float32)


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    try:
        await register_vector_async(conn)
    except psycopg.ProgrammingError as exc:
        raise SchemaNotReadyError(
            "vector type not found in the database: the pgvector extension is missing "
            "(run `memstream migrate` as a role allowed to CREATE EXTENSION vector)"
        ) from exc
    info = conn.adapters.types.get("vector")
    if info is not None:
        conn.adapters.register_loader(info.oid, VectorArrayLoader)


#: A connection prepares a statement the first time it runs it (psycopg's default waits for the
#: fifth): the gateway's statements come in a few dozen shapes (the text query's differs with
#: the number of its lexemes), and each of a pool's connections ran each shape unprepared five
#: times, parsed, analysed and expanded for row-level security each time, and described back.
#: At 16 clients on a fresh gateway that was 1,500 searches or so; eight alternated rounds of
#: 300 searches on a held stack, each on a fresh gateway: 123.9 searches a second before and
#: 140.8 after (medians), Postgres 6.07 → 5.63 and the gateway 8.15 → 7.45 CPU ms a search.
PREPARE_THRESHOLD = 0


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
            "prepare_threshold": PREPARE_THRESHOLD,
            "options": options,
        },
        reconnect_timeout=float("inf"),
    )
