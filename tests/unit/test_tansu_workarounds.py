"""The embedded-broker workarounds apply to the embedded broker only (see streams/tansu.py)."""

from __future__ import annotations

from typing import Any

import aiokafka
import pytest
from aiokafka.consumer.fetcher import Fetcher
from aiokafka.consumer.group_coordinator import GroupCoordinator, NoGroupCoordinator

from memstream.settings import Settings
from streams.app import broker_url, build_app
from streams.tansu import (
    FETCH_IDLE_AFTER_S,
    FETCH_IDLE_WAIT_MS,
    FETCH_MAX_WAIT_MS,
    TansuFetcher,
    TansuGroupCoordinator,
    TansuKafkaConsumer,
    TansuTransport,
    adopt,
    consumer_class,
    incarnation_group,
)


def worker_consumer(embedded: bool, *, cluster_id: str | None = None) -> tuple[Any, Any]:
    settings = Settings(
        kafka_bootstrap_servers="127.0.0.1:1",
        database_url="postgresql://u:p@127.0.0.1:1/db",
        redis_url="redis://127.0.0.1:1/0",
        embedded_broker=embedded,
    )
    app = build_app(settings, cluster_id=cluster_id).app
    thread = app.consumer._thread  # created with the consumer, never started
    try:
        return app, thread._create_worker_consumer(app.transport)
    finally:
        thread.thread_loop.close()  # never started, so it would never close its own loop


@pytest.mark.parametrize(("embedded", "wait_ms"), [(True, FETCH_MAX_WAIT_MS), (False, 1500)])
async def test_fetch_wait_is_short_only_on_the_embedded_broker(embedded: bool, wait_ms: int) -> None:
    app, consumer = worker_consumer(embedded)
    try:
        assert isinstance(app.transport, TansuTransport) is embedded
        assert consumer._fetch_max_wait_ms == wait_ms
    finally:
        await consumer.stop()


def test_broker_urls() -> None:
    assert broker_url("a:9092, b:9092") == "kafka://a:9092;kafka://b:9092"
    assert broker_url("127.0.0.1:9092", embedded=True) == "tansu://127.0.0.1:9092"


@pytest.mark.parametrize("embedded", [True, False])
async def test_group_and_offset_workarounds_only_on_the_embedded_broker(embedded: bool) -> None:
    """Faust's worker consumer carries the end-offset and leave-group workarounds on Tansu only;
    a real Kafka gets aiokafka's own consumer, fetcher and coordinator."""
    _app, consumer = worker_consumer(embedded)
    try:
        assert isinstance(consumer, TansuKafkaConsumer) is embedded
        assert type(consumer) is (TansuKafkaConsumer if embedded else aiokafka.AIOKafkaConsumer)
        assert consumer_class(embedded) is type(consumer)
    finally:
        await consumer.stop()


async def test_the_tansu_consumer_adopts_the_fetcher_and_coordinator_aiokafka_builds() -> None:
    consumer = TansuKafkaConsumer(bootstrap_servers="127.0.0.1:1")
    try:
        # What AIOKafkaConsumer.start() does: build aiokafka's own classes and assign them.
        consumer._fetcher = object.__new__(Fetcher)
        consumer._coordinator = object.__new__(GroupCoordinator)
        assert type(consumer._fetcher) is TansuFetcher
        assert type(consumer._coordinator) is TansuGroupCoordinator
        consumer._coordinator = no_group = object.__new__(NoGroupCoordinator)
        assert type(consumer._coordinator) is NoGroupCoordinator and consumer._coordinator is no_group
        consumer._fetcher = consumer._coordinator = None
    finally:
        await consumer.stop()


async def test_adopting_a_started_consumer_is_refused() -> None:
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1")
    consumer._fetcher = object.__new__(Fetcher)  # as if started
    with pytest.raises(RuntimeError, match="before it starts"):
        adopt(consumer)
    consumer._fetcher = None
    await consumer.stop()


async def test_on_the_embedded_broker_the_group_is_named_after_the_broker_incarnation() -> None:
    assert incarnation_group("memstream", "memstream-1a2b") == "memstream@memstream-1a2b"
    for cluster_id, group in (("memstream-1a2b", "memstream@memstream-1a2b"), (None, "memstream")):
        _app, consumer = worker_consumer(True, cluster_id=cluster_id)
        try:
            assert consumer._group_id == group
        finally:
            await consumer.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_the_fetch_wait_grows_while_nothing_comes_and_shrinks_with_the_first_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle worker asks the broker twice a second instead of twenty times; the first record
    brings the short wait back for the next fetch."""
    answers: list[bool] = []

    async def aiokafkas(self: Fetcher, assignment: object, node_id: int, request: object) -> bool:
        return answers.pop(0)

    clock = Clock()
    monkeypatch.setattr(Fetcher, "_proc_fetch_request", aiokafkas)
    monkeypatch.setattr("streams.tansu.time.monotonic", clock)
    fetcher = object.__new__(TansuFetcher)
    fetcher._fetch_max_wait_ms = FETCH_MAX_WAIT_MS  # as the worker's consumer builds it

    async def fetch(records: bool, *, after_s: float) -> int:
        clock.now += after_s
        answers.append(records)
        assert await fetcher._proc_fetch_request(None, 0, None) is records
        return int(fetcher._fetch_max_wait_ms)

    assert await fetch(False, after_s=0.05) == FETCH_MAX_WAIT_MS  # the first empty answer starts the count
    assert await fetch(False, after_s=FETCH_IDLE_AFTER_S - 0.1) == FETCH_MAX_WAIT_MS
    assert await fetch(False, after_s=0.1) == FETCH_IDLE_WAIT_MS
    assert await fetch(False, after_s=60) == FETCH_IDLE_WAIT_MS
    assert await fetch(True, after_s=0.5) == FETCH_MAX_WAIT_MS
    assert await fetch(False, after_s=1.0) == FETCH_MAX_WAIT_MS  # records came a second ago
    assert FETCH_IDLE_WAIT_MS > FETCH_MAX_WAIT_MS
