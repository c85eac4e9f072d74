"""Read-path latency at growing memory sizes: ``python -m bench.read``.

Starts a private stack without the long-term memory worker (this measures reads), then
loads one user of one tenant with ``--sizes`` memories in turn (10,000, then 90,000 more),
straight through the sinks as the ingest worker writes them: embedded episodes with their
importance and token counts (``upsert_episodes``, binary COPY, 5,000 per batch) and the
event log (``append_events``, which ``previous_session`` reads). The texts are agent
conversations (``bench.corpus``) made distinct with ticket / PR / build references, spread
over 50 sessions in three projects (and no project) and over the last 90 days. The session
queried has its newest 20 turns in its Redis session buffer, as the worker would leave it.

After ``VACUUM ANALYZE`` at each size (and, under the default ``vector_index=auto``, the
HNSW index once the user has outgrown exact search, as the memory worker's maintenance
builds it), for each concurrency N it sends ``--requests`` requests to each endpoint from
N concurrent tasks over keep-alive connections, after a few warm-up requests, and times
each request on the client:

- ``GET /v1/search?user_id=&q=&k=10`` (hybrid: vector + full text over every kind, RRF,
  decay, boosts, MMR);
- ``GET /v1/context?user_id=&session_id=&project_id=&query=&budget=2000`` (facts, the
  session buffer, and a search with the rules decomposition, packed to the budget);
- ``search_repeated``: the search above, each question asked three times in a row by one
  client, as an ADK agent's model calls in one turn each search (``PreloadMemoryTool``): the
  second and third are answered from the gateway's cache of repeated searches.

``--users N --per-user M`` is the tenant-scale mode instead: N users of one tenant with M
memories each (``--users 1000 --per-user 1000`` is a million rows), searched one random
user at a time.

Reported per endpoint and concurrency: p50/p95/p99/mean latency in ms and requests/s
(requests / wall time of the run), over every request, the CPU milliseconds per request
each part of the stack spent (``cpu_ms_per_request``: gateway, postgres, redis, broker,
workers and this client, from ``/proc``; on two cores the sum is what bounds requests/s),
and how the nearest episodes were found (``vector_scan``: exact or hnsw, per request); a
request the gateway refuses with a 5xx (503 when its pool gives no connection within 30 s)
is counted in ``errors`` and its wait is in the latencies (``ok`` counts the 200s). The
queries are the user's next messages, none asked twice in a run outside ``search_repeated``
(the gateway caches query embeddings and answers a repeated search from memory).
The whole stack (Postgres, Redis, broker, ingest worker, gateway) and this client share
the machine's cores, so the figures include that contention. No facts or skills are
loaded: the memory worker is off, so those tables are empty.

A backend's first searches cost more than its later ones: opening it (about 9 ms of CPU on
both sides), its first use of each table and index, and the five custom plans Postgres makes
of each prepared statement before it settles on a generic one. The gateway opens and primes
its whole pool at start (``MEMSTREAM_GATEWAY_POOL_WARM``; set it to false to measure one that
opens connections under load, as before 2026-12-05). ``--warm-pool K`` sends K untimed requests
per client before each phase, of questions of their own (the timed questions are the same with
or without them): the phase then measures a gateway that has been serving a while. The default
(0) keeps the figures comparable with earlier ones. Questions get easier as a run goes on (more
of them name a ticket, whose rare word selects few rows): compare phases at the same place in
the sequence only.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import orjson
import psycopg
import redis.asyncio as aioredis
from pgvector.psycopg import register_vector_async

from bench.corpus import conversation_roles, turn_text
from bench.cpu import CpuMeter
from bench.loadclient import Connection
from memstream.embedder.local import WordLlamaEmbedder
from memstream.importance import importance
from memstream.settings import Settings
from memstream.tokens import TokenCounter
from ops.stack.session import issue_key, stack_session
from schemas.turns import Role, Turn
from sinks.postgres.episodes import Episode, upsert_episodes
from sinks.postgres.event_log import append_events
from sinks.postgres.vector_index import IndexWatch, ensure_vector_index
from sinks.redis.buffer import SessionRef, session_buffers, to_entry

USER = "bench-user"
AGENT = "bench-agent"
SESSIONS = 50
PROJECTS: tuple[str | None, ...] = ("CloudRetail", "Payments", "Platform", None)
#: The session /v1/context is asked about (its project is ``PROJECTS[0]``).
QUERIED_SESSION = "session-0"
BUFFERED_TURNS = 20
BATCH = 5_000
HISTORY = timedelta(days=90)

_REFERENCES = (
    "ticket OPS-{n}",
    "PR #{n}",
    "incident INC-{n}",
    "build {n}",
    "commit {h}",
    "runbook step {s}",
)
_OPENERS = ("", "", "Quick one: ", "Following up: ", "Before the standup, ", "Another thing. ")


def reference(rng: random.Random) -> str:
    """A ticket, PR, build or commit: what makes two otherwise similar turns differ."""
    return rng.choice(_REFERENCES).format(
        n=rng.randrange(100, 10_000), h=f"{rng.getrandbits(28):07x}", s=rng.randrange(1, 30)
    )


def memory_text(rng: random.Random, role: Role) -> str:
    return f"{turn_text(rng, role)} ({reference(rng)})"


def query_text(rng: random.Random) -> str:
    """The user's next message: a question or request, sometimes naming a reference."""
    text = rng.choice(_OPENERS) + turn_text(rng, "user")
    if rng.random() < 0.3:
        text += f" It is {reference(rng)}."
    return text


def role_at(index: int) -> Role:
    """The role of a conversation's ``index``-th turn (user, assistant, tool, assistant, ...)."""
    return cast(Role, conversation_roles(index))


def session_of(index: int) -> tuple[str, str | None]:
    return f"session-{index}", PROJECTS[index % len(PROJECTS)]


def history(tenant: str, rng: random.Random, count: int, *, now: datetime, user: str = USER) -> list[Turn]:
    """``count`` turns over the sessions, at random times in the last 90 days (but the last hour)."""
    turns = []
    for i in range(count):
        session, project = session_of(rng.randrange(SESSIONS))
        role = role_at(i)
        turns.append(
            Turn(
                event_id=uuid.uuid4(), tenant_id=tenant, agent_id=AGENT, user_id=user, project_id=project,
                session_id=session, role=role, content=memory_text(rng, role),
                event_time=now - timedelta(hours=1) - (HISTORY - timedelta(hours=1)) * rng.random(),
            )
        )  # fmt: skip
    return turns


def recent(tenant: str, rng: random.Random, *, now: datetime) -> list[Turn]:
    """The queried session's newest turns, one a minute up to now: episodes and its buffer."""
    session, project = session_of(0)
    return [
        Turn(
            event_id=uuid.uuid4(), tenant_id=tenant, agent_id=AGENT, user_id=USER, project_id=project,
            session_id=session, role=role_at(i), content=memory_text(rng, role_at(i)),
            event_time=now - timedelta(minutes=BUFFERED_TURNS - i),
        )
        for i in range(BUFFERED_TURNS)
    ]  # fmt: skip


@dataclass(frozen=True)
class Writers:
    embedder: WordLlamaEmbedder
    tokens: TokenCounter


async def load(database_url: str, writers: Writers, turns: Sequence[Turn]) -> None:
    """Write turns as the ingest worker does: episodes (embedded, importance, tokens) and the event log."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        await register_vector_async(conn)
        for first in range(0, len(turns), BATCH):
            batch = turns[first : first + BATCH]
            texts = [t.content for t in batch]
            vectors = await writers.embedder.embed(texts)
            counts = writers.tokens.count_many(texts)
            episodes = [
                Episode(t, vector, tokens, importance(t.content, role=t.role))
                for t, vector, tokens in zip(batch, vectors, counts, strict=True)
            ]
            await upsert_episodes(conn, episodes, model=writers.embedder.model_name)
            await append_events(conn, batch)


async def fill_buffer(settings: Settings, writers: Writers, turns: Sequence[Turn]) -> None:
    client = aioredis.from_url(settings.require_redis_url())
    try:
        counts = writers.tokens.count_many([t.content for t in turns])
        await session_buffers(client, settings).append(
            {SessionRef.of(turns[0]): [to_entry(t, n) for t, n in zip(turns, counts, strict=True)]}
        )
    finally:
        await client.aclose()


def settle(settings: Settings, embedder: WordLlamaEmbedder) -> None:
    """After a load, what the memory worker's maintenance does: ``VACUUM ANALYZE``, and under
    ``vector_index=auto`` the HNSW index once a user has outgrown exact search (then long
    enough for the gateway to notice it)."""
    with psycopg.connect(settings.require_owner_database_url(), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE episodes")
        conn.execute("VACUUM ANALYZE event_log")
    built = ensure_vector_index(
        settings.require_owner_database_url(), strategy=settings.vector_index, model=embedder.model_name,
        dim=embedder.dim, min_episodes=settings.hnsw_min_episodes,
    )  # fmt: skip
    if built:
        time.sleep(IndexWatch.RECHECK_S + 1)


@dataclass
class Run:
    #: Every request, answered or refused (a refusal is a wait the caller had too).
    latencies_ms: list[float]
    wall_s: float
    #: Bodies of the 200s.
    bodies: list[Any]
    #: Requests refused with a 5xx (e.g. 503 when the gateway's pool gave no connection in time), by status.
    errors: dict[int, int]
    #: CPU milliseconds per request spent by each process group (``bench.cpu``).
    cpu_ms: dict[str, float]


async def fire(
    url: str, api_key: str, path: str, params: Sequence[Mapping[str, str | int]], *, concurrency: int, repeat: int = 1
) -> Run:
    """GET ``path`` once per params (``repeat`` times in a row, by one task), from
    ``concurrency`` tasks sharing one queue; a 4xx is a bug of this benchmark and stops it, a
    5xx is counted and the run goes on."""
    headers = {"authorization": f"Bearer {api_key}"}
    latencies: list[float] = []
    bodies: list[Any] = []
    errors: dict[int, int] = {}
    queue = iter(params)

    async def worker() -> None:
        async with Connection(url, headers) as connection:  # one keep-alive connection per task
            for query in (q for q in queue for _ in range(repeat)):
                started = time.perf_counter()
                response = await connection.get(path, query)
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status == 200:
                    bodies.append(orjson.loads(response.body))
                elif response.status >= 500:
                    errors[response.status] = errors.get(response.status, 0) + 1
                else:
                    raise RuntimeError(f"GET {path} -> {response.status}: {response.body.decode(errors='replace')}")

    meter = CpuMeter()
    meter.start()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall_s = time.perf_counter() - started
    return Run(latencies, wall_s, bodies, errors, meter.per_request(len(latencies)))


def summary(run: Run) -> dict[str, Any]:
    cuts = statistics.quantiles(run.latencies_ms, n=100, method="inclusive")
    return {
        "p50_ms": round(cuts[49], 1),
        "p95_ms": round(cuts[94], 1),
        "p99_ms": round(cuts[98], 1),
        "mean_ms": round(statistics.fmean(run.latencies_ms), 1),
        "requests_per_s": round(len(run.latencies_ms) / run.wall_s, 1),
        "ok": len(run.bodies),
        "errors": {str(status): n for status, n in sorted(run.errors.items())},
        "cpu_ms_per_request": run.cpu_ms,
    }


class Questions:
    """The user's next messages (``query_text``), none asked twice in a run: the gateway answers
    a repeated search from its cache (``search_cache_s``), and the runs measure searches, not
    lookups (``repeat`` measures those)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.asked: set[str] = set()

    def __call__(self) -> str:
        text = query_text(self.rng)
        while text in self.asked:
            text = f"{query_text(self.rng)} It is {reference(self.rng)}."
        self.asked.add(text)
        return text


class WarmUpQuestions(Questions):
    """Questions for ``--warm-pool``'s untimed requests: drawn from their own generator (the
    timed sequence is the same with or without them) and marked, so that none of them is a
    question the timed requests ask (its answer would be in the cache)."""

    def __init__(self, seed: int) -> None:
        super().__init__(random.Random(seed))
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"{super().__call__()} It is warm-up {self.count}."


def search_params(ask: Questions, n: int, users: Sequence[str] = (USER,)) -> list[dict[str, str | int]]:
    return [{"user_id": ask.rng.choice(users), "q": ask(), "k": 10} for _ in range(n)]


def context_params(ask: Questions, n: int) -> list[dict[str, str | int]]:
    session, project = session_of(0)
    assert project is not None
    return [
        {"user_id": USER, "session_id": session, "project_id": project, "query": ask(), "budget": 2000}
        for _ in range(n)
    ]


#: ``search_repeated``: each question asked this many times in a row by one client (an ADK
#: agent's model calls in one turn each search, ``PreloadMemoryTool``).
REPEAT = 3


async def measure(
    url: str,
    api_key: str,
    ask: Questions,
    *,
    requests: int,
    concurrency: Sequence[int],
    warmup: int,
    warm_pool: int = 0,
    warm: Questions | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Both endpoints at every concurrency, and searches asked ``REPEAT`` times in a row; also
    what the gateway said it used (model, tokenizer). ``warm_pool``: that many untimed
    requests per client first, of ``warm``'s questions (``--warm-pool``)."""
    out: dict[str, Any] = {}
    used: dict[str, str] = {}
    for name, path, make, repeat in (
        ("search", "/v1/search", search_params, 1),
        ("context", "/v1/context", context_params, 1),
        ("search_repeated", "/v1/search", search_params, REPEAT),
    ):
        out[name] = {}
        for n in concurrency:
            if warm_pool and warm is not None:
                await fire(url, api_key, path, make(warm, warm_pool * n), concurrency=n)
            await fire(url, api_key, path, make(ask, max(warmup, n)), concurrency=n)
            run = await fire(url, api_key, path, make(ask, max(1, requests // repeat)), concurrency=n, repeat=repeat)
            figures = summary(run)
            if not run.bodies:
                raise RuntimeError(f"GET {path}: no request answered at concurrency {n} ({run.errors})")
            figures["vector_scan"] = dict(sorted(Counter(str(b.get("vector_scan")) for b in run.bodies).items()))
            if name != "context":
                used["embedding_model"] = run.bodies[0]["embedding_model"]
                figures["hits_mean"] = round(statistics.fmean(len(b["hits"]) for b in run.bodies), 1)
            else:
                used["tokenizer"] = run.bodies[0]["tokenizer"]
                figures["sub_queries_mean"] = round(
                    statistics.fmean(len(b["decomposition"]["queries"]) for b in run.bodies), 2
                )
                figures["tokens_mean"] = round(statistics.fmean(b["tokens"] for b in run.bodies))
            out[name][f"c{n}"] = figures
    return out, used


async def run_tenant_scale(args: argparse.Namespace, settings: Settings, gateway_url: str) -> dict[str, Any]:
    """``--users N --per-user M``: N users of one tenant with M memories each; each search is
    one random user's (the index and the tables hold every user's rows)."""
    rng = random.Random(args.seed)
    ask = Questions(rng)
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    api_key = issue_key(settings, tenant_id=tenant, scopes=["read"], name="bench.read", rate_limit_per_s=1e6)
    writers = Writers(WordLlamaEmbedder(), TokenCounter())
    now = datetime.now(UTC)
    users = [f"user-{i:05d}" for i in range(args.users)]
    started = time.perf_counter()
    for first in range(0, len(users), max(1, BATCH // args.per_user)):
        chunk = users[first : first + max(1, BATCH // args.per_user)]
        turns = [t for user in chunk for t in history(tenant, rng, args.per_user, now=now, user=user)]
        await load(settings.require_database_url(), writers, turns)
    load_s = time.perf_counter() - started
    settle(settings, writers.embedder)
    out: dict[str, Any] = {
        "benchmark": "read", "mode": "tenant-scale", "users": args.users, "per_user": args.per_user,
        "memories": args.users * args.per_user, "load_s": round(load_s, 1), "vector_index": settings.vector_index,
        "gateway_workers": settings.gateway_workers,
        "embedding_model": writers.embedder.model_name, "requests": args.requests, "warm_pool": args.warm_pool,
        "cpus": os.cpu_count(), "search": {},
    }  # fmt: skip
    warm = WarmUpQuestions(args.seed + 1)
    for n in args.concurrency:
        if args.warm_pool:
            await fire(
                gateway_url, api_key, "/v1/search", search_params(warm, args.warm_pool * n, users), concurrency=n
            )
        await fire(gateway_url, api_key, "/v1/search", search_params(ask, max(args.warmup, n), users), concurrency=n)
        result = await fire(gateway_url, api_key, "/v1/search", search_params(ask, args.requests, users), concurrency=n)
        if not result.bodies:
            raise RuntimeError(f"GET /v1/search: no request answered at concurrency {n} ({result.errors})")
        figures = summary(result)
        figures["vector_scan"] = dict(sorted(Counter(str(b["vector_scan"]) for b in result.bodies).items()))
        figures["hits_mean"] = round(statistics.fmean(len(b["hits"]) for b in result.bodies), 1)
        out["search"][f"c{n}"] = figures
    return out


async def run(args: argparse.Namespace, settings: Settings, gateway_url: str) -> dict[str, Any]:
    rng = random.Random(args.seed)
    ask = Questions(rng)
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    api_key = issue_key(settings, tenant_id=tenant, scopes=["ingest", "read"], name="bench.read", rate_limit_per_s=1e6)
    writers = Writers(WordLlamaEmbedder(), TokenCounter())
    now = datetime.now(UTC)
    buffered = recent(tenant, rng, now=now)
    await fill_buffer(settings, writers, buffered)
    out: dict[str, Any] = {
        "benchmark": "read",
        "vector_index": settings.vector_index,
        "gateway_workers": settings.gateway_workers,
        "embedding_model": writers.embedder.model_name,
        "tokenizer": writers.tokens.name,
        "requests": args.requests,
        "warm_pool": args.warm_pool,
        "concurrency": args.concurrency,
        "sessions": SESSIONS,
        "buffered_turns": BUFFERED_TURNS,
        "cpus": os.cpu_count(),
        "sizes": {},
    }
    loaded = 0
    warm = WarmUpQuestions(args.seed + 1)
    for size in args.sizes:
        started = time.perf_counter()
        turns = history(tenant, rng, size - loaded - (0 if loaded else len(buffered)), now=now)
        await load(settings.require_database_url(), writers, [*turns, *(buffered if not loaded else [])])
        load_s = time.perf_counter() - started
        loaded = size
        settle(settings, writers.embedder)
        figures, used = await measure(
            gateway_url, api_key, ask, requests=args.requests, concurrency=args.concurrency, warmup=args.warmup,
            warm_pool=args.warm_pool, warm=warm,
        )  # fmt: skip
        if used["embedding_model"] != writers.embedder.model_name:
            raise RuntimeError(f"the gateway embeds with {used['embedding_model']}, the memories with another model")
        out["tokenizer"] = used["tokenizer"]
        out["sizes"][str(size)] = {"episodes": size, "load_s": round(load_s, 1), **figures}
    return out


def numbers(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError("expected positive integers separated by commas")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.read", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=numbers, default=[10_000, 100_000], help="memories of the user, growing")
    parser.add_argument("--requests", type=int, default=200, help="timed requests per endpoint and concurrency")
    parser.add_argument("--concurrency", type=numbers, default=[1, 16], help="concurrent clients, one run each")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests first (at least one per client)")
    parser.add_argument(
        "--warm-pool",
        type=int,
        default=0,
        help="before that, this many untimed requests per client of questions of their own: the gateway's"
        " connections and their Postgres backends are then warm, as in a gateway that has been serving a while",
    )
    parser.add_argument("--vector-index", choices=["auto", "exact", "hnsw"], default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--users", type=int, default=0, help="tenant-scale mode: this many users of one tenant")
    parser.add_argument("--per-user", type=int, default=1_000, help="tenant-scale mode: memories of each user")
    parser.add_argument(
        "--gateway-workers", type=int, default=2, help="gateway processes (memstream up --gateway-workers)"
    )
    args = parser.parse_args(argv)
    if args.users < 0 or args.per_user < 1:
        parser.error("--users must be 0 or more and --per-user 1 or more")
    if args.sizes != sorted(set(args.sizes)) or args.sizes[0] < BUFFERED_TURNS:
        parser.error(f"--sizes must grow, starting at {BUFFERED_TURNS} or more")
    if args.requests < 2:
        parser.error("--requests must be at least 2")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    chosen: dict[str, Any] = {"vector_index": args.vector_index} if args.vector_index else {}
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        settings = Settings(
            data_dir=Path(tmp), embedded_broker_port=0, embedded_postgres_port=0, embedded_redis_port=0,
            embedding_provider="local", gateway_workers=args.gateway_workers, **chosen,
        )  # fmt: skip
        with stack_session(settings, memory=False) as stack:
            result = asyncio.run((run_tenant_scale if args.users else run)(args, stack.settings, stack.gateway_url))
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
