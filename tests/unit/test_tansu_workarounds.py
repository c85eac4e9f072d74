"""The embedded-broker workarounds apply to the embedded broker only (see streams/tansu.py)."""

from __future__ import annotations

from typing import Any

import pytest

from memstream.settings import Settings
from streams.app import broker_url, build_app
from streams.tansu import FETCH_MAX_WAIT_MS, TansuTransport


def worker_consumer(embedded: bool) -> tuple[Any, Any]:
    settings = Settings(
        kafka_bootstrap_servers="127.0.0.1:1",
        database_url="postgresql://u:p@127.0.0.1:1/db",
        redis_url="redis://127.0.0.1:1/0",
        embedded_broker=embedded,
    )
    app = build_app(settings).app
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
