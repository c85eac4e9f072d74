"""The arithmetic behind the worker metrics: lag per partition, retry counting, metrics ports."""

from __future__ import annotations

from pathlib import Path

import psycopg
from faust.types import TP
from prometheus_client import generate_latest

from agents_gateway.metrics import GatewayMetrics
from memstream.settings import Settings
from ops.stack.supervisor import worker_metrics_port
from streams.metrics import WorkerMetrics
from streams.monitoring import PartitionOffsets, partition_offsets
from streams.retry import Backoff, retry_until_done
from tests.integration.scrape import Scrape


def settings(**overrides: object) -> Settings:
    return Settings(
        kafka_bootstrap_servers="127.0.0.1:1",
        database_url="postgresql://u:p@127.0.0.1:1/db",
        redis_url="redis://127.0.0.1:1/0",
        **overrides,  # type: ignore[arg-type]
    )


def test_lag_is_end_minus_committed_and_a_group_that_never_committed_starts_at_zero() -> None:
    a, b, c = TP("t", 0), TP("t", 1), TP("t", 2)
    offsets = partition_offsets({b: 7, a: 10, c: 3}, {a: 4, b: None, c: -1001})
    assert offsets == [PartitionOffsets("t", 0, 10, 4), PartitionOffsets("t", 1, 7, 0), PartitionOffsets("t", 2, 3, 0)]
    assert [o.lag for o in offsets] == [6, 7, 3]
    assert PartitionOffsets("t", 0, end=5, committed=9).lag == 0  # never negative


async def test_every_retried_failure_is_counted_by_operation_and_error() -> None:
    metrics = WorkerMetrics()
    backoff = Backoff(initial_s=0.001, max_s=0.002, on_retry=metrics.count_retry)
    failures = [psycopg.OperationalError("down"), psycopg.OperationalError("down")]

    async def flaky() -> str:
        if failures:
            raise failures.pop()
        return "done"

    assert await retry_until_done(flaky, what="episodes sink", backoff=backoff, where="turns[0]@1") == "done"
    page = Scrape(generate_latest(metrics.registry).decode())
    assert page.value("memstream_retries_total", operation="episodes sink", error="OperationalError") == 2


def test_forgetting_partitions_drops_their_series() -> None:
    metrics = WorkerMetrics()
    for partition in ("0", "1"):
        metrics.lag.labels("g", "t", partition).set(1)
    metrics.forget_partitions("g", [("t", 1)])
    page = Scrape(generate_latest(metrics.registry).decode())
    assert page.labels("memstream_consumer_lag", "partition", group="g") == {"0": 1.0}


def test_each_worker_of_memstream_up_gets_its_own_metrics_port() -> None:
    assert [worker_metrics_port(settings(worker_metrics_port=9400), i) for i in range(3)] == [9400, 9401, 9402]
    assert worker_metrics_port(settings(worker_metrics_port=-1), 0) is None
    free = worker_metrics_port(settings(worker_metrics_port=0), 0)  # 0: a free port, chosen now
    assert free is not None and free > 0


def test_every_metric_is_listed_in_the_operations_guide() -> None:
    worker, gateway = WorkerMetrics(), GatewayMetrics()
    gateway.watch(caches=dict, llms=list)  # the cache and LLM families, with no caches or clients
    families = {f.name for registry in (worker.registry, gateway.registry) for f in registry.collect()}
    guide = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    section = guide.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    missing = sorted(n for n in families if f"`{n}`" not in section and f"`{n}_total`" not in section)
    assert len(families) > 20 and not missing, missing
