"""The Faust app, built from settings (never a hard-coded broker URL)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import faust
import psycopg
import psycopg_pool
from aiokafka.errors import KafkaError

from memstream.kafka_security import KafkaSecurity
from memstream.settings import Settings
from schemas.codec import audit_record_codec, compaction_request_codec
from schemas.faust_codec import register_faust_codecs
from streams import faust_agents, heartbeat, monitoring, tansu
from streams.audit_relay import AuditRelay
from streams.broker_reset import watch_broker
from streams.compaction import CompactionRequests
from streams.deadletter import DeadLetters
from streams.defects import Defects
from streams.resources import PipelineResources
from streams.stages.base import SinkStage, StageContext
from streams.stages.buffer import BufferStage
from streams.stages.episodes import EpisodesStage
from streams.stages.event_log import EventLogStage
from streams.topics import Topics, declare_topics, refuse_topic_auto_creation

log = logging.getLogger(__name__)


@dataclass
class Pipeline:
    app: faust.App
    topics: Topics
    resources: PipelineResources
    stages: tuple[SinkStage, ...]


def broker_url(bootstrap_servers: str, *, embedded: bool = False) -> str:
    """Faust's broker URL; the embedded Tansu broker gets its own scheme (``streams/tansu.py``)."""
    scheme = tansu.SCHEME if embedded else "kafka"
    return ";".join(f"{scheme}://{server.strip()}" for server in bootstrap_servers.split(","))


def broker_credentials(security: KafkaSecurity) -> faust.auth.Credentials | None:
    """The Kafka security of every other client, as Faust's ``broker_credentials``: Faust hands
    them back to aiokafka as the same arguments (``credentials_to_aiokafka_auth`` in
    ``faust.transport.drivers.aiokafka``); None is PLAINTEXT."""
    context = security.ssl_context if security.uses_tls else None
    if security.uses_sasl:  # with a TLS context SASL_SSL, without one SASL_PLAINTEXT
        password = security.sasl_password.get_secret_value() if security.sasl_password else None
        return faust.SASLCredentials(
            username=security.sasl_username, password=password, mechanism=security.sasl_mechanism, ssl_context=context
        )
    if context is not None:
        return faust.SSLCredentials(context)
    return None


def faust_app(settings: Settings, *, app_id: str, cluster_id: str | None = None) -> faust.App:
    """A Faust app (its own consumer group, ``app_id``; on the embedded broker
    ``app_id@cluster_id``: ``streams/tansu.py``) configured from settings."""
    register_faust_codecs()
    tansu.register_transport(cluster_id=cluster_id)
    if settings.embedded_broker:  # topics are created with their partition counts, never by a metadata ask
        refuse_topic_auto_creation()
    faust_dir = settings.data_dir / "faust"
    faust_dir.mkdir(parents=True, exist_ok=True)  # Faust makes only the last level
    return faust.App(
        app_id,
        broker=broker_url(settings.require_kafka(), embedded=settings.embedded_broker),
        broker_credentials=broker_credentials(settings.kafka_security()),
        autodiscover=False,
        store="memory://",
        # Faust makes ``<datadir>/v1/tables`` at start even with memory stores: keep it in the
        # stack's data directory rather than the working directory.
        datadir=str(faust_dir / "{conf.id}"),
        key_serializer="raw",
        value_serializer="raw",
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        # Tansu holds a new group's first JoinGroup for session-timeout / 2 (docs/embedded-broker.md).
        broker_session_timeout=settings.broker_session_timeout_s,
        broker_heartbeat_interval=settings.broker_heartbeat_interval_s,
        topic_partitions=settings.topic_partitions,
        # Faust creates one topic itself, its leader topic (`<app_id>-__assignor-__leader`): with the
        # replication factor a managed cluster may insist on.
        topic_replication_factor=settings.topic_replication_factor,
        web_enabled=False,
        worker_redirect_stdouts=False,
    )


def build_app(settings: Settings, *, cluster_id: str | None = None) -> Pipeline:
    """The ingest worker; ``cluster_id``: the embedded broker's, as the worker found it at start."""
    app = faust_app(settings, app_id=settings.app_id, cluster_id=cluster_id)
    topics = declare_topics(app, partitions=settings.topic_partitions)
    resources = PipelineResources(settings)
    ctx = StageContext.of(resources, DeadLetters(topics.dlq, metrics=resources.metrics))
    stages: tuple[SinkStage, ...] = (
        EventLogStage(resources),
        EpisodesStage(resources),
        BufferStage(resources, CompactionRequests(topics.compaction, compaction_request_codec())),
    )
    defects = Defects(resources.redis, settings.app_id, resources.metrics)
    faust_agents.register(app, topics.turns, faust_agents.turns("ingest", stages, ctx), defects)

    heartbeat.announce_from(app, resources.redis, settings)
    monitoring.install(app, resources.metrics, lag_interval_s=settings.consumer_lag_interval_s)
    # A broker back empty: restart in place.
    watch_broker(app, settings.require_kafka(), security=settings.kafka_security(), cluster_id=cluster_id)

    relay = AuditRelay(resources.pool, topics.audit, audit_record_codec(), resources.metrics)

    async def relay_audit() -> None:
        try:
            while await relay.relay_once() == relay.page:
                pass  # a backlog: keep going until the outbox is drained
        except (psycopg.Error, psycopg_pool.PoolTimeout, KafkaError) as exc:
            log.warning("audit relay: %s: %s; will retry", type(exc).__name__, exc)

    app.timer(interval=settings.audit_relay_interval_s)(relay_audit)
    return Pipeline(app=app, topics=topics, resources=resources, stages=stages)
