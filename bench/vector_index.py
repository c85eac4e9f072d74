"""Exact vs HNSW vector search over one user's episodes: ``python -m bench.vector_index``.

Loads ``--rows`` episodes for one user (plus ``--noise`` rows spread over other users
of the tenant) into a private embedded Postgres, then times top-k vector search the
way the gateway runs it, with each strategy, and reports HNSW's recall against exact.
The ingest cost of each strategy is ``bench.ingest --vector-index exact|hnsw``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import psycopg
from pgvector.psycopg import register_vector_async

from bench.corpus import turn_text
from memstream.embedder.local import WordLlamaEmbedder
from memstream.settings import Settings
from ops.stack.supervisor import EmbeddedStack
from schemas.turns import Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.queries.retrieval import Filters, VectorScan, vector_candidates
from sinks.postgres.vector_index import ensure_vector_index

TENANT = "bench"


def texts(rng: random.Random, n: int) -> list[str]:
    roles = ("user", "assistant", "tool")
    return [f"{turn_text(rng, rng.choice(roles))} (#{rng.randrange(10**6)})" for _ in range(n)]


async def load(url: str, embedder: WordLlamaEmbedder, *, user: str, rows: int, rng: random.Random) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await register_vector_async(conn)
        for first in range(0, rows, 5000):
            chunk = texts(rng, min(5000, rows - first))
            vectors = await embedder.embed(chunk)
            episodes = [
                Episode(
                    Turn(
                        event_id=uuid.uuid4(),
                        tenant_id=TENANT,
                        agent_id="a",
                        user_id=user,
                        project_id=None,
                        session_id=f"s{(first + i) // 50}",
                        role="user",
                        content=text,
                        event_time=start + timedelta(seconds=first + i),
                    ),
                    vector,
                    20,
                )
                for i, (text, vector) in enumerate(zip(chunk, vectors, strict=True))
            ]
            await upsert_episodes(conn, episodes, model=embedder.model_name)


async def time_queries(
    url: str, embedder: WordLlamaEmbedder, *, user: str, strategy: VectorScan, queries: list[str], k: int
) -> tuple[list[float], list[list[Any]]]:
    scope = Filters(tenant_id=TENANT, user_id=user, memory_types=("episodic",))
    vectors = await embedder.embed(queries)
    latencies, results = [], []
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await register_vector_async(conn)
        for vector in vectors:
            started = time.perf_counter()
            rows = await vector_candidates(conn, scope, vector, model=embedder.model_name, limit=k, scan=strategy)
            latencies.append((time.perf_counter() - started) * 1000)
            results.append([r.id for r in rows])
    return latencies, results


def summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
    }


async def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    rng = random.Random(args.seed)
    embedder = WordLlamaEmbedder()
    url, owner = settings.require_database_url(), settings.require_owner_database_url()
    out: dict[str, Any] = {"benchmark": "vector_index", "k": args.k, "embedding_model": embedder.model_name}
    loaded = 0
    await load(url, embedder, user="noise", rows=args.noise, rng=rng)
    queries = [turn_text(rng, "user") for _ in range(args.queries)]
    for size in args.rows:
        await load(url, embedder, user="heavy", rows=size - loaded, rng=rng)
        loaded = size
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE episodes")
        ensure_vector_index(owner, strategy="exact", model=embedder.model_name, dim=embedder.dim, min_episodes=0)
        await time_queries(url, embedder, user="heavy", strategy="exact", queries=queries[:5], k=args.k)
        exact_ms, exact = await time_queries(url, embedder, user="heavy", strategy="exact", queries=queries, k=args.k)
        built = time.perf_counter()
        ensure_vector_index(owner, strategy="hnsw", model=embedder.model_name, dim=embedder.dim, min_episodes=0)
        build_s = time.perf_counter() - built
        await time_queries(url, embedder, user="heavy", strategy="hnsw", queries=queries[:5], k=args.k)
        hnsw_ms, hnsw = await time_queries(url, embedder, user="heavy", strategy="hnsw", queries=queries, k=args.k)
        recall = statistics.mean(len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(exact, hnsw, strict=True))
        out[f"user_rows_{size}"] = {
            "table_rows": size + args.noise,
            "exact": summary(exact_ms),
            "hnsw": {
                **summary(hnsw_ms),
                f"recall_at_{args.k}": round(recall, 3),
                "build_s": round(build_s, 1),
            },
        }
    ensure_vector_index(owner, strategy="exact", model=embedder.model_name, dim=embedder.dim, min_episodes=0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vector_index", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 50_000])
    parser.add_argument("--noise", type=int, default=50_000, help="rows of other users in the table")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=50, help="candidates per query (the gateway asks for 50)")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        base = Settings(data_dir=Path(tmp), embedded_broker_port=0, embedded_postgres_port=0, embedded_redis_port=0)
        stack = EmbeddedStack(base)
        try:
            resolved = stack.start_services()
            result = asyncio.run(run(args, resolved))
        finally:
            stack.stop()
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
