"""What the fault-injection tests share: a private embedded stack (they stop and start its
services, so never the session's shared one), a steady load of turns, checks that every
accepted turn landed exactly once, and a record of what each test observed.

Observations are attached to the test (``record_property``, so they reach a JUnit report)
and, when ``MEMSTREAM_FAULT_REPORT`` names a file, appended to it as one JSON line per test.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from fastapi import FastAPI

from agents_gateway.app import create_app
from memstream.settings import Settings
from ops.stack.supervisor import EmbeddedStack
from schemas import topics
from schemas.codec import turn_event_codec
from schemas.turns import turn_key
from sinks.redis.keys import buffer_key
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, make_settings
from tests.integration.helpers import avro_record

REPORT_VARIABLE = "MEMSTREAM_FAULT_REPORT"


class PrivateStack(RunningStack):
    """Broker, Postgres and Redis of one test, in its own data directory, plus its workers."""

    def __init__(self, data_dir: Path, **overrides: object) -> None:
        embedded = EmbeddedStack(make_settings(data_dir, **overrides))
        try:
            resolved = embedded.start_services()
        except BaseException:
            embedded.stop()
            raise
        super().__init__(embedded, resolved)
        self.workers: list[WorkerHandle] = []

    def worker(
        self,
        name: str = "worker",
        *,
        memory: bool = False,
        env: Mapping[str, str] | None = None,
        **overrides: object,
    ) -> WorkerHandle:
        """A worker subprocess (not started) with these settings changed (and ``env`` added)."""
        settings = self.settings.model_copy(update=overrides)
        handle = WorkerHandle(settings, self.settings.data_dir / "logs" / f"{name}.log", memory=memory, env=env)
        self.workers.append(handle)
        return handle

    def stop(self) -> None:
        try:
            for handle in self.workers:
                handle.stop()
        finally:
            self.embedded.stop()


@contextlib.asynccontextmanager
async def private_stack(data_dir: Path, **overrides: object) -> AsyncIterator[PrivateStack]:
    """A private stack, started and stopped in a thread (its set-up runs its own event loop)."""
    stack = await asyncio.to_thread(PrivateStack, data_dir, **overrides)
    try:
        yield stack
    finally:
        await asyncio.to_thread(stack.stop)


@contextlib.asynccontextmanager
async def gateway_for(settings: Settings, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway in-process on this stack, and a client presenting ``api_key``."""
    app: FastAPI = create_app(settings)
    async with app.router.lifespan_context(app), client_for(app, api_key) as client:
        yield client


# -- load --------------------------------------------------------------------------------


@dataclass
class LoadStats:
    #: Event ids the broker (or the gateway) acknowledged, in the order sent.
    accepted: list[str] = field(default_factory=list)
    #: Per session, the contents of its acknowledged turns in order.
    by_session: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    #: Batches refused (503 or an unacknowledged produce), each sent again with the same ids.
    refused_batches: int = 0
    retry_after: set[str] = field(default_factory=set)
    #: (monotonic time, accepted so far) when each batch was acknowledged.
    progress: list[tuple[float, int]] = field(default_factory=list)

    def accepted_between(self, start: float, end: float) -> int:
        before = [n for t, n in self.progress if t < start]
        upto = [n for t, n in self.progress if t <= end]
        return (upto[-1] if upto else 0) - (before[-1] if before else 0)


Send = Callable[[list[dict[str, Any]]], Any]


def make_turn(tenant: str, session: str, content: str, *, user: str = "user-0", role: str = "user") -> dict[str, Any]:
    """A turn record (the TurnEvent schema's fields) with a fresh event id."""
    return avro_record(tenant, content, session=session, user_id=user, role=role, shared=False)


class TurnLoad:
    """A steady load of turns from ``sessions`` sessions of one tenant: ``rate_per_s`` turns a
    second in batches of ``batch``, one batch in flight at a time, so each session's turns are
    sent in order. A batch that is refused is sent again, same event ids, until it is accepted
    (what an agent does with a 503): nothing the load counts as accepted was refused."""

    def __init__(self, tenant: str, send: Send, *, rate_per_s: float = 300, batch: int = 10, sessions: int = 10):
        self.tenant = tenant
        self.send = send
        self.interval_s = batch / rate_per_s
        self.batch = batch
        self.sessions = sessions
        self.stats = LoadStats()
        self._next = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def session(self, i: int) -> str:
        return f"s{i % self.sessions:02d}"

    def _turns(self) -> list[dict[str, Any]]:
        out = []
        for _ in range(self.batch):
            i = self._next
            self._next += 1
            session = self.session(i)
            content = f"turn {i} of {session}: the load keeps talking about topic {i % 17}"
            out.append(
                make_turn(self.tenant, session, content, user=user_of(session), role=("user", "assistant")[i % 2])
            )
        return out

    async def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            turns = self._turns()
            while not await self.send(turns):
                self.stats.refused_batches += 1
                await asyncio.sleep(0.2)
            for t in turns:
                self.stats.accepted.append(t["event_id"])
                self.stats.by_session[t["session_id"]].append(t["content"])
            self.stats.progress.append((time.monotonic(), len(self.stats.accepted)))
            due = max(due + self.interval_s, time.monotonic() - 1.0)  # catch up at most 1 s
            await asyncio.sleep(max(0.0, due - time.monotonic()))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="turn-load")

    async def stop(self) -> LoadStats:
        """Stop sending, and close the sender if it holds a connection of its own."""
        self._stop.set()
        assert self._task is not None
        await self._task
        if isinstance(self.send, KafkaSender):
            await self.send.close()
        return self.stats

    async def wait_accepted(self, n: int, *, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.stats.accepted) < n:
            assert self._task is not None and not self._task.done(), "the load stopped"
            assert time.monotonic() < deadline, f"only {len(self.stats.accepted)} of {n} turns accepted"
            await asyncio.sleep(0.05)


class KafkaSender:
    """Sends a batch as Avro straight to the turns topic (as an agent may); False when the
    broker did not acknowledge every record within ``timeout_s``."""

    def __init__(self, bootstrap_servers: str, *, timeout_s: float = 3.0) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self.codec = turn_event_codec()
        self.producer: AIOKafkaProducer | None = None

    async def __call__(self, turns: list[dict[str, Any]]) -> bool:
        try:
            if self.producer is None:
                producer = AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap_servers, enable_idempotence=False, linger_ms=2,
                    request_timeout_ms=int(self.timeout_s * 1000),
                )  # fmt: skip
                await asyncio.wait_for(producer.start(), self.timeout_s)
                self.producer = producer
            futures = [
                await self.producer.send(
                    topics.TURNS, key=turn_key(t["tenant_id"], t["session_id"]), value=self.codec.encode(t)
                )
                for t in turns
            ]
            await asyncio.wait_for(asyncio.gather(*futures), self.timeout_s)
            return True
        except (KafkaError, OSError, TimeoutError):
            return False

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.stop()


class GatewaySender:
    """Posts a batch through the gateway; False on 503 (which must carry Retry-After)."""

    def __init__(self, client: httpx.AsyncClient, stats: Callable[[], LoadStats]) -> None:
        self.client = client
        self.stats = stats

    async def __call__(self, turns: list[dict[str, Any]]) -> bool:
        body = [{**t, "event_time": t["event_time"].isoformat()} for t in turns]
        for t in body:
            for name in ("tool_name", "tool_status", "project_id"):
                if t[name] is None:
                    t.pop(name)
        response = await self.client.post("/v1/turns", json={"turns": body})
        if response.status_code == 503:
            assert response.headers.get("retry-after"), "a 503 must say when to retry"
            self.stats().retry_after.add(response.headers["retry-after"])
            return False
        assert response.status_code == 202, response.text
        return True


# -- checks ------------------------------------------------------------------------------


def stored_ids(stack: RunningStack, tenant: str, table: str) -> list[str]:
    """Every event id of the tenant in ``table`` (episodes or event_log), repeats included."""
    query = {
        "episodes": "SELECT event_id::text FROM episodes WHERE tenant_id = %s",
        "event_log": "SELECT event_id::text FROM event_log WHERE tenant_id = %s",
    }[table]
    with stack.db(tenant) as conn:
        return [str(row[0]) for row in conn.execute(query, (tenant,)).fetchall()]


def landed(stack: RunningStack, tenant: str, accepted: list[str]) -> bool:
    """True when both tables hold every accepted event id."""
    want = set(accepted)
    return all(want <= set(stored_ids(stack, tenant, table)) for table in ("event_log", "episodes"))


def assert_exactly_once(stack: RunningStack, tenant: str, accepted: list[str]) -> None:
    """Every accepted turn is in the event log and in episodic memory, once."""
    for table in ("event_log", "episodes"):
        ids = stored_ids(stack, tenant, table)
        assert len(ids) == len(set(ids)), f"{table}: {len(ids) - len(set(ids))} duplicates"
        assert set(ids) == set(accepted), f"{table}: {len(set(accepted) - set(ids))} accepted turns missing"


def user_of(session: str) -> str:
    """The load's sessions belong to three users (a buffer is per user and session)."""
    return f"user-{int(session.removeprefix('s')) % 3}"


def buffered(stack: RunningStack, tenant: str, session: str) -> list[dict[str, Any]]:
    client = stack.redis()
    try:
        key = buffer_key(tenant, user_of(session), session)
        members: list[bytes] = client.zrange(key, 0, -1)  # type: ignore[assignment]
        return [orjson.loads(m) for m in members]
    finally:
        client.close()


def assert_buffers_consistent(stack: RunningStack, tenant: str, by_session: dict[str, list[str]]) -> None:
    """Each session's buffer is the newest run of its accepted turns, in order, without repeats or
    gaps: at least ``buffer_max_turns`` of them (a summariser folds older ones away), at most the
    hard cap (which bounds it when no summariser runs)."""
    cap = max(stack.settings.buffer_hard_cap_turns, stack.settings.buffer_max_turns)
    for session, contents in by_session.items():
        held = [t["content"] for t in buffered(stack, tenant, session)]
        least = min(stack.settings.buffer_max_turns, len(contents))
        assert least <= len(held) <= cap, f"{session}: buffer holds {len(held)} turns, expected {least}..{cap}"
        assert held == contents[len(contents) - len(held) :], f"{session}: the buffer is not the newest turns in order"


async def buffers_settle(
    stack: RunningStack, tenant: str, by_session: dict[str, list[str]], *, timeout_s: float = 30.0
) -> None:
    """``assert_buffers_consistent`` once it holds, within ``timeout_s``: the buffer stage writes a
    batch concurrently with the Postgres sinks, so the last batch may be buffered after they
    landed. On timeout, the last inconsistency is the failure."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            assert_buffers_consistent(stack, tenant, by_session)
            return
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
        await asyncio.sleep(0.2)


def log_lines(handle: WorkerHandle, fragment: str) -> list[str]:
    """Lines of the worker's log containing ``fragment`` (e.g. retries it logged)."""
    path = handle.process.log_path
    if path is None or not path.exists():
        return []
    return [line for line in path.read_text(errors="replace").splitlines() if fragment in line]


def log_count(handle: WorkerHandle, fragment: str) -> int:
    return len(log_lines(handle, fragment))


async def until(check: Callable[[], Any], *, timeout_s: float, interval_s: float = 0.2) -> float:
    """Await until ``check()`` (sync or async) is truthy; return the seconds it took."""
    started = time.monotonic()
    last: Any = None
    while time.monotonic() - started < timeout_s:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return time.monotonic() - started
        await asyncio.sleep(interval_s)
    raise AssertionError(f"condition not met within {timeout_s} s (last value: {last!r})")


def observe(record_property: Callable[[str, object], None], test: str, **figures: object) -> None:
    """Keep what a fault test observed (see the module docstring)."""
    line = {"test": test, **figures}
    for name, value in figures.items():
        record_property(name, value)
    path = os.environ.get(REPORT_VARIABLE)
    if path:
        with open(path, "ab") as fh:
            fh.write(orjson.dumps(line) + b"\n")
