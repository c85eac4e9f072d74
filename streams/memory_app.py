"""The long-term memory worker: a Faust app of its own (its own consumer group), so that
extraction and summaries, which may wait on an LLM, never slow ingestion.

Agents:
- ``memory-turns`` (turns topic): fact extraction → ``memstream.facts.v1``; tool outcomes →
  skills and lessons;
- ``facts`` (facts topic): embed and apply facts to versioned semantic memory and the graph;
- ``summaries`` (compaction topic): fold sessions' overflow into their rolling summaries;
- timers: expiry, compaction and forgetting (``MEMSTREAM_MAINTENANCE_INTERVAL_S``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

import faust
import psycopg
import psycopg_pool
from aiokafka.errors import KafkaError

from memstream.llm.base import LLMError
from memstream.settings import Settings
from schemas.codec import compaction_request_codec, fact_event_codec, turn_event_codec
from streams import heartbeat, monitoring
from streams.agents.extract import ExtractionStage, TopicFacts
from streams.agents.facts import run_facts
from streams.agents.procedures import ProcedureStage
from streams.agents.summaries import run_summaries
from streams.app import faust_app
from streams.broker_reset import watch_broker
from streams.deadletter import DeadLetters
from streams.heartbeat import memory_app_name
from streams.maintenance import Maintainer
from streams.parking import ParkingExtraction, RetryParking, retry_topic, run_retries
from streams.resources import MemoryResources
from streams.stage import SinkStage, StageContext, run_ingest
from streams.topics import Topics, declare_topics

log = logging.getLogger(__name__)


@dataclass
class MemoryPipeline:
    app: faust.App
    topics: Topics
    resources: MemoryResources


def memory_app_id(settings: Settings) -> str:
    return memory_app_name(settings.app_id)


def build_memory_app(settings: Settings, *, cluster_id: str | None = None) -> MemoryPipeline:
    """The long-term memory worker; ``cluster_id``: the embedded broker's, as found at start."""
    app = faust_app(settings, app_id=memory_app_id(settings), cluster_id=cluster_id)
    topics = declare_topics(app, partitions=settings.topic_partitions)
    resources = MemoryResources(settings)
    dead_letters = DeadLetters(topics.dlq, metrics=resources.metrics)
    ctx = StageContext(
        codec=turn_event_codec(),
        tokens=resources.tokens,
        policies=resources.policies,
        metrics=resources.metrics,
        dead_letters=dead_letters,
        backoff=resources.backoff,
        max_events=settings.batch_max_events,
        within_s=settings.batch_within_s,
        max_content_chars=settings.max_content_chars,
        dead_letter_rejects=False,  # the ingest worker dead-letters them already
    )
    retries = retry_topic(app, partitions=settings.topic_partitions)
    extraction = ParkingExtraction(
        ExtractionStage(resources, TopicFacts(topics.facts, fact_event_codec())),
        RetryParking(retries, base_delay_s=settings.retry_max_s),  # LLM still failing: park, go on
    )
    stages: tuple[SinkStage, ...] = (extraction, ProcedureStage(resources))

    async def memory_turns(stream: faust.StreamT[bytes]) -> None:
        await run_ingest(cast(faust.Stream[bytes], stream), stages, ctx)

    async def facts(stream: faust.StreamT[bytes]) -> None:
        await run_facts(
            cast(faust.Stream[bytes], stream), resources, codec=fact_event_codec(), dead_letters=dead_letters,
            max_events=settings.batch_max_events, within_s=settings.batch_within_s,
        )  # fmt: skip

    async def summaries(stream: faust.StreamT[bytes]) -> None:
        await run_summaries(
            cast(faust.Stream[bytes], stream), resources, codec=compaction_request_codec(),
            dead_letters=dead_letters, max_events=100, within_s=settings.batch_within_s,
        )  # fmt: skip

    app.agent(topics.turns, name=f"{app.conf.id}.turns")(memory_turns)
    app.agent(topics.facts, name=f"{app.conf.id}.facts")(facts)
    app.agent(topics.compaction, name=f"{app.conf.id}.summaries")(summaries)

    async def parked(stream: faust.StreamT[bytes]) -> None:
        await run_retries(cast(faust.Stream[bytes], stream), extraction, ctx)

    app.agent(retries, name=f"{app.conf.id}.retries")(parked)

    async def maintain() -> None:
        maintainer = Maintainer(
            resources.pool, settings, resources.models.summarizer, resources.embedder, resources.tokens
        )
        try:
            for report in await maintainer.run_all():
                if report.compacted or report.forgotten_ids or any(report.expired.values()):
                    log.info("maintenance of %s: %s", report.tenant_id, report.as_dict())
        except (psycopg.Error, psycopg_pool.PoolTimeout, KafkaError, LLMError) as exc:
            log.warning("maintenance: %s: %s; next run in %.0f s", type(exc).__name__, exc,
                        settings.maintenance_interval_s)  # fmt: skip

    app.timer(interval=settings.maintenance_interval_s)(maintain)
    heartbeat.announce_from(app, resources.redis, settings)
    monitoring.install(app, resources.metrics, lag_interval_s=settings.consumer_lag_interval_s)
    watch_broker(app, settings.require_kafka(), cluster_id=cluster_id)  # a broker back empty: restart in place
    return MemoryPipeline(app=app, topics=topics, resources=resources)
