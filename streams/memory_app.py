"""The long-term memory worker: a Faust app of its own (its own consumer group), so that
extraction and summaries, which may wait on an LLM, never slow ingestion.

Faust agents (``streams/faust_agents.py``):
- ``turns`` (turns topic): fact extraction → ``memstream.facts.v1``; tool outcomes →
  skills and lessons;
- ``facts`` (facts topic): embed and apply facts to versioned semantic memory and the graph;
- ``summaries`` (compaction topic): fold sessions' overflow into their rolling summaries;
- ``retries`` (retry topic): extract parked turns again once due (``streams/parking.py``);
- timers: expiry, compaction and forgetting (``MEMSTREAM_MAINTENANCE_INTERVAL_S``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import faust
import psycopg
import psycopg_pool
from aiokafka.errors import KafkaError

from memstream.llm.base import LLMError
from memstream.settings import Settings
from schemas.codec import compaction_request_codec, fact_event_codec
from sinks.postgres.vector_index import ensure_vector_index
from streams import faust_agents, heartbeat, monitoring
from streams.app import faust_app
from streams.broker_reset import watch_broker
from streams.deadletter import DeadLetters
from streams.defects import Defects
from streams.heartbeat import memory_app_name
from streams.maintenance import Maintainer
from streams.parking import ParkingExtraction, RetryParking, retry_topic
from streams.resources import MemoryResources
from streams.stages.base import StageContext
from streams.stages.extract import ExtractionStage, TopicFacts
from streams.stages.procedures import ProcedureStage
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
    ctx = StageContext.of(
        resources, DeadLetters(topics.dlq, metrics=resources.metrics),
        dead_letter_rejects=False,  # the ingest worker dead-letters them already
    )  # fmt: skip
    retries = retry_topic(app, partitions=settings.topic_partitions)
    extraction = ParkingExtraction(
        ExtractionStage(resources, TopicFacts(topics.facts, fact_event_codec())),
        RetryParking(retries, base_delay_s=settings.retry_max_s),  # LLM still failing: park, go on
    )
    defects = Defects(resources.redis, memory_app_id(settings), resources.metrics)
    for topic, consumer in (
        (topics.turns, faust_agents.turns("turns", (extraction, ProcedureStage(resources)), ctx)),
        (topics.facts, faust_agents.facts(resources, fact_event_codec(), ctx)),
        (topics.compaction, faust_agents.summaries(resources, compaction_request_codec(), ctx)),
        (retries, faust_agents.retries(extraction, ctx)),
    ):
        faust_agents.register(app, topic, consumer, defects)

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
        await grow_vector_index()

    async def grow_vector_index() -> None:
        """Under ``auto``, the HNSW index once a user has outgrown exact search (as the owner)."""
        owner = settings.owner_database_url
        if settings.vector_index != "auto" or owner is None:
            return
        try:
            await asyncio.to_thread(
                ensure_vector_index, owner.get_secret_value(), strategy="auto", model=resources.embedder.model_name,
                dim=resources.embedder.dim, min_episodes=settings.hnsw_min_episodes,
            )  # fmt: skip
        except psycopg.Error as exc:
            log.warning("vector index: %s: %s; next try in %.0f s", type(exc).__name__, exc,
                        settings.maintenance_interval_s)  # fmt: skip

    app.timer(interval=settings.maintenance_interval_s)(maintain)
    heartbeat.announce_from(app, resources.redis, settings)
    monitoring.install(app, resources.metrics, lag_interval_s=settings.consumer_lag_interval_s)
    # A broker back empty: restart in place.
    watch_broker(app, settings.require_kafka(), security=settings.kafka_security(), cluster_id=cluster_id)
    return MemoryPipeline(app=app, topics=topics, resources=resources)
