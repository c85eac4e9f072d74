"""``/metrics`` of a real worker subprocess and of the gateway, read after traffic: records
counted per topic, consumer lag per partition right on the embedded broker (whose
ListOffsets answer is short) and back to 0 once the backlog is processed, a dead-lettered
record counted, cache hits, LLM calls and tokens; and a worker that stops cleanly leaves its
consumer group (the embedded broker's generation-0 bug)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from fastapi import FastAPI
from prometheus_client import CollectorRegistry, generate_latest

from memstream.llm.base import LLMError
from memstream.llm.gemini import GeminiLLM
from memstream.metrics import LLMCollector
from schemas.codec import turn_event_codec
from schemas.topics import DLQ, TURNS
from streams.tansu import incarnation_group
from tests.fixtures.gemini import FakeGemini
from tests.fixtures.stack import RunningStack, WorkerHandle, client_for, eventually
from tests.integration.faults import private_stack
from tests.integration.helpers import avro_record, post_turns, turn
from tests.integration.scrape import Scrape

#: Turns per batch, per partition of the turns topic: each partition's last batch holds
#: several records, so an end offset taken from Tansu's ListOffsets would be short.
BATCHES = {0: (6, 3), 1: (4,), 2: (2, 5), 3: (3,)}


async def scrape(url: str) -> Scrape:
    async with httpx.AsyncClient() as client:
        response = await client.get(url, timeout=5)
    assert response.status_code == 200, response.text
    return Scrape(response.text)


def where(worker: WorkerHandle) -> dict[str, str]:
    """The labels of the worker's consumer-group series on the turns topic."""
    return {"group": worker.app_id, "topic": TURNS}


async def plain_end_offsets(bootstrap: str, ends: dict[int, int]) -> dict[int, int]:
    """The end offsets of these turns partitions as plain aiokafka reads them (ListOffsets)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        answer = await consumer.end_offsets([TopicPartition(TURNS, p) for p in ends])
    finally:
        await consumer.stop()
    return {tp.partition: offset for tp, offset in answer.items()}


async def caught_up(worker: WorkerHandle, ends: dict[int, int] | None = None) -> Scrape | None:
    """The scrape once the worker's group committed everything on every turns partition (and,
    with ``ends``, the end offsets it reports are these), else None."""
    page = await scrape(worker.metrics_url)
    lag = page.labels("memstream_consumer_lag", "partition", **where(worker))
    if len(lag) != worker.settings.topic_partitions or any(lag.values()):
        return None
    if ends is not None:  # only the partitions the test wrote to: earlier tests may have used others
        reported = page.labels("memstream_consumer_end_offset", "partition", **where(worker))
        committed = page.labels("memstream_consumer_committed_offset", "partition", **where(worker))
        for partition, end in ends.items():
            if reported.get(str(partition)) != end or committed.get(str(partition)) != end:
                return None
    return page


async def produce(bootstrap: str, tenant: str) -> tuple[dict[int, int], int]:
    """BATCHES of valid turns plus one undecodable record on partition 0, straight to the turns
    topic; returns the end offset of each partition (from the broker's acks) and the records sent."""
    codec = turn_event_codec()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    await producer.start()
    ends: dict[int, int] = {}
    sent = 0
    try:
        for partition, sizes in BATCHES.items():
            for size in sizes:
                batch = producer.create_batch()
                for i in range(size):
                    value = codec.encode(avro_record(tenant, f"metrics turn {partition}.{i}", session=f"s{partition}"))
                    assert batch.append(key=None, value=value, timestamp=None) is not None
                metadata = await (await producer.send_batch(batch, TURNS, partition=partition))
                ends[partition] = metadata.offset + size
                sent += size
        poison = await (await producer.send(TURNS, value=b"\x00not avro", partition=0))
        ends[0] = poison.offset + 1
    finally:
        await producer.stop()
    return ends, sent + 1


async def group_members(bootstrap: str, group: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [response] = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    [(error_code, _, _, _, _, members, *_)] = response.groups
    assert error_code == 0
    return [member_id for member_id, *_ in members]


def worker_group(stack: RunningStack, worker: WorkerHandle) -> str:
    """A worker's consumer group on the embedded broker: named after the broker's incarnation."""
    broker = stack.embedded.broker
    assert broker is not None and broker.cluster_id
    return incarnation_group(worker.app_id, broker.cluster_id)


async def test_worker_metrics(stack: RunningStack, running_worker: WorkerHandle, tenant: str) -> None:
    worker = running_worker
    bootstrap = stack.settings.require_kafka()
    await eventually(lambda: caught_up(worker), timeout_s=60)  # what earlier tests left is done
    before = await scrape(worker.metrics_url)

    ends, records = await produce(bootstrap, tenant)
    await eventually(lambda: caught_up(worker, ends), timeout_s=60)
    after = await scrape(worker.metrics_url)

    # The lag is right where a plain client's would not be: Tansu's ListOffsets answers a short
    # end offset for a partition whose last batch holds several records (docs/embedded-broker.md, bug 1).
    raw = await plain_end_offsets(bootstrap, ends)
    assert any(raw[p] < end for p, end in ends.items()), (raw, ends)
    for partition, end in ends.items():
        assert after.value("memstream_consumer_end_offset", partition=str(partition), **where(worker)) == end
        assert after.value("memstream_consumer_lag", partition=str(partition), **where(worker)) == 0

    def delta(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("memstream_events_in_total", topic=TURNS) == records
    assert delta("memstream_events_processed_total", topic=TURNS) == records
    assert delta("memstream_processing_seconds_count", topic=TURNS) == records
    assert delta("memstream_event_age_seconds_count", topic=TURNS) == records
    assert delta("memstream_worker_events_total", outcome="accepted") == records - 1
    assert delta("memstream_dead_letters_total", stage="decode", error="DecodeError") == 1
    assert delta("memstream_events_out_total", topic=DLQ) == 1
    for stage in ("event-log", "episodes", "buffer"):
        assert delta("memstream_stage_seconds_count", stage=stage) >= 1
    assert delta("memstream_cache_requests_total", cache="embedding") >= records - 1  # each turn's text
    assert delta("memstream_cache_requests_total", cache="tenant_settings") >= 1
    assert 0 <= after.value("memstream_cache_hit_ratio", cache="tenant_settings") <= 1


async def test_a_worker_that_stops_cleanly_leaves_its_group_at_once(tmp_path: Path) -> None:
    """In generation 0 too (``streams/tansu.py``): on the embedded broker the member used to stay
    until its session timed out. On a stack of its own: the session's worker is never stopped."""
    async with private_stack(tmp_path) as stack:
        worker = stack.worker()
        await asyncio.to_thread(worker.start)
        bootstrap = stack.settings.require_kafka()
        assert await group_members(bootstrap, worker_group(stack, worker))
        await asyncio.to_thread(worker.stop)
        assert await group_members(bootstrap, worker_group(stack, worker)) == []


async def test_memory_worker_metrics(
    running_memory_worker: WorkerHandle, gateway: httpx.AsyncClient, tenant: str
) -> None:
    """The memory worker serves the same families for its own consumer group and stages."""
    worker = running_memory_worker
    await eventually(lambda: caught_up(worker), timeout_s=60)
    before = await scrape(worker.metrics_url)
    await post_turns(gateway, [turn(tenant, "s1", "I prefer dark mode in every editor.")])

    async def processed() -> Scrape | None:
        page = await caught_up(worker)
        done = page is not None and page.value("memstream_events_processed_total", topic=TURNS) > before.value(
            "memstream_events_processed_total", topic=TURNS
        )
        return page if done else None

    await eventually(processed, timeout_s=60)
    after = await scrape(worker.metrics_url)
    assert after.value("memstream_stage_seconds_count", stage="extract") > before.value(
        "memstream_stage_seconds_count", stage="extract"
    )
    assert len(after.labels("memstream_consumer_lag", "partition", **where(worker))) == worker.settings.topic_partitions
    assert after.value("memstream_cache_requests_total", cache="tenant_settings") > 0  # the privacy policy


async def test_gateway_metrics(gateway_app: FastAPI, gateway: httpx.AsyncClient, tenant: str) -> None:
    async with client_for(gateway_app, None) as anonymous:
        before = Scrape((await anonymous.get("/metrics")).text)
        for _ in range(2):
            await post_turns(gateway, [turn(tenant, "s1", f"metrics turn {i}") for i in range(3)])
        assert (await gateway.get("/v1/search", params={"user_id": "user-1", "q": "metrics"})).status_code == 200
        assert (await anonymous.get("/v1/nowhere")).status_code == 404
        after = Scrape((await anonymous.get("/metrics")).text)

    def delta(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("memstream_events_out_total", topic=TURNS) == 6
    # The test's key is new: its first lookup reads Postgres, the next ones hit the cache.
    assert delta("memstream_cache_requests_total", cache="auth", result="miss") == 1
    assert delta("memstream_cache_requests_total", cache="auth", result="hit") == 2
    assert delta("memstream_cache_requests_total", cache="tenant_settings") >= 2
    assert delta("memstream_cache_requests_total", cache="tenant_settings", result="hit") >= 1
    assert delta("memstream_cache_requests_total", cache="embedding") >= 1
    requests = "memstream_gateway_request_seconds_count"
    assert delta(requests, method="POST", route="/v1/turns", status="202") == 2
    assert delta(requests, method="GET", route="/v1/search", status="200") == 1
    assert delta(requests, method="GET", route="unmatched", status="404") == 1


async def test_llm_calls_tokens_retries_and_errors(gemini: FakeGemini) -> None:
    llm = GeminiLLM(
        api_key="test-key", model="gemini-test", base_url=gemini.base_url, timeout_s=5, max_concurrency=1,
        max_attempts=2, retry_initial_s=0.01, retry_max_s=0.02,
    )  # fmt: skip
    registry = CollectorRegistry()
    registry.register(LLMCollector(lambda: [llm, None]))
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    try:
        gemini.then(status=429).then_json({"a": 1}, input_tokens=12, output_tokens=5)
        await llm.generate_json(system="s", prompt=str(uuid.uuid4()), schema=schema)
        gemini.then(status=400)
        with pytest.raises(LLMError) as refused:
            await llm.generate_json(system="s", prompt="refused", schema=schema)
        assert refused.value.kind == "refused"
    finally:
        await llm.aclose()
    page = Scrape(generate_latest(registry).decode())
    model = {"model": "gemini/gemini-test"}
    assert page.value("memstream_llm_calls_total", **model) == 2
    assert page.value("memstream_llm_tokens_total", direction="input", **model) == 12
    assert page.value("memstream_llm_tokens_total", direction="output", **model) == 5
    assert page.value("memstream_llm_retries_total", **model) == 1
    assert page.value("memstream_llm_errors_total", kind="refused", **model) == 1
