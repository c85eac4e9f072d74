"""Connection pools: opened in a lifespan / on_start, closed in a finally."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg.bit import register_bit_info
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.sparsevec import register_sparsevec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg_pool import AsyncConnectionPool, PoolTimeout

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


#: pgvector's types, as ``pgvector.psycopg.register_vector_async`` registers them.
_VECTOR_TYPES: tuple[tuple[str, Callable[[Any, TypeInfo], None]], ...] = (
    ("vector", register_vector_info),
    ("bit", register_bit_info),
    ("halfvec", register_halfvec_info),
    ("sparsevec", register_sparsevec_info),
)


class _Configure:
    """A pool's ``configure``: each new connection knows pgvector's types, read from the
    catalog by the pool's first connection only. ``register_vector_async`` reads them on every
    connection, a catalog query each (four round trips, some 6 ms of a fresh backend's first
    use), and a gateway process under load opens a dozen connections at once. The types' ids
    hold for the database's life; an operator who drops and re-creates the extension drops
    every vector column with it, and restarts the processes anyway (a parameter of a type id
    that no longer exists then fails at once)."""

    def __init__(self) -> None:
        self._types: list[tuple[Callable[[Any, TypeInfo], None], TypeInfo]] | None = None

    async def __call__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if self._types is None:
            found = [(register, await TypeInfo.fetch(conn, name)) for name, register in _VECTOR_TYPES]
            if found[0][1] is None:
                raise SchemaNotReadyError(
                    "vector type not found in the database: the pgvector extension is missing "
                    "(run `memstream migrate` as a role allowed to CREATE EXTENSION vector)"
                )
            self._types = [(register, info) for register, info in found if info is not None]
        for register, info in self._types:
            register(conn, info)
        conn.adapters.register_loader(self._types[0][1].oid, VectorArrayLoader)


#: A connection prepares a statement the first time it runs it (psycopg's default waits for the
#: fifth): the gateway's statements come in a few dozen shapes (the text query's differs with
#: the number of its lexemes), and each of a pool's connections ran each shape unprepared five
#: times, parsed, analysed and expanded for row-level security each time, and described back.
#: At 16 clients on a fresh gateway that was 1,500 searches or so; eight alternated rounds of
#: 300 searches on a held stack, each on a fresh gateway: 123.9 searches a second before and
#: 140.8 after (medians), Postgres 6.07 → 5.63 and the gateway 8.15 → 7.45 CPU ms a search.
PREPARE_THRESHOLD = 0


class LifoConnectionPool(AsyncConnectionPool):
    """A pool that lends the connection returned last (psycopg_pool lends the one idle longest).

    Lent in turn, every connection of a pool of 16 served a sixteenth of a quiet gateway's
    requests: each backend kept its catalog caches, prepared statements and custom plans for
    few requests, and a request mostly met a backend that had not run its statements lately.
    Lent last-in first-out, a quiet gateway works on one or two connections that stay hot, and
    the others wait for a burst (primed at start, ``sinks/postgres/queries/warmup.py``); the
    pool's shrinking (``max_idle``) then closes the connections unused longest, as it should.
    ``psycopg_pool`` is pinned: ``tests/integration/test_pool_priming.py`` checks the order."""

    async def _get_ready_connection(self, timeout: float | None) -> Any:  # noqa: ASYNC109 (the library's signature)
        if timeout is not None and timeout <= 0.0:
            raise PoolTimeout()
        if not self._pool:
            return await super()._get_ready_connection(timeout)
        conn = self._pool.pop()  # the most recently returned
        if len(self._pool) < self._nconns_min:
            self._nconns_min = len(self._pool)
        return conn


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
    # TimeZone UTC: every time comes back in ``datetime.timezone.utc``. The server's default
    # (``Etc/UTC`` for the embedded one, anything for a server brought along) came back as a
    # ``ZoneInfo``, and converting to it was most of reading a time: a search reads a hundred
    # candidates' times, 0.08 ms of its CPU against 0.01 (docs/benchmarks.md). No statement
    # depends on the session's zone (a day is taken ``AT TIME ZONE 'UTC'``).
    options = f"-c memstream.text_search_config={text_search_config} -c TimeZone=UTC"
    if search_path is not None:
        options += f" -c search_path={search_path}"
    return LifoConnectionPool(
        url,
        name=name,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=_Configure(),
        kwargs={
            "application_name": f"memstream-{name}",
            "prepare_threshold": PREPARE_THRESHOLD,
            "options": options,
        },
        reconnect_timeout=float("inf"),
    )
