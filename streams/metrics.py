"""The worker's Prometheus metrics, served on ``MEMSTREAM_WORKER_METRICS_HOST:PORT`` (0: a free
port, logged; -1: off). Every metric is listed in docs/operations.md, "Metrics"."""

from __future__ import annotations

import logging
from collections import Counter as Tally
from collections.abc import Iterable
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from memstream.errors import MemstreamError

log = logging.getLogger(__name__)

#: Seconds: from tens of milliseconds (a quiet pipeline) to minutes (a backlog, an LLM outage).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.events = Counter(
            "memstream_worker_events_total", "Turns read from the turns topic, by outcome.", ["outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.redactions = Counter(
            "memstream_redactions_total",
            "Secrets and personal data replaced by placeholders, by kind.",
            ["kind", "stage"],
            registry=self.registry,
        )
        self.summaries = Counter(
            "memstream_summaries_total", "Rolling-summary folds, by summariser.", ["summarizer"],
            registry=self.registry,
        )  # fmt: skip
        self.summary_tokens = Counter(
            "memstream_summary_tokens_total", "Tokens sent to / received from the summariser.", ["direction"],
            registry=self.registry,
        )  # fmt: skip
        self.facts = Counter(
            "memstream_facts_total",
            "Facts applied, by action (insert, merge, supersede, history, duplicate; erased, forgotten: skipped).",
            ["action"], registry=self.registry,
        )  # fmt: skip
        self.audit_published = Counter(
            "memstream_audit_published_total", "Audit records published to memstream.audit.v1.",
            registry=self.registry,
        )  # fmt: skip
        # --- the flow through Kafka (streams/monitoring.py feeds these from Faust's sensor hooks)
        self.events_in = Counter(
            "memstream_events_in_total", "Records consumed, by topic (a redelivered record counts again).",
            ["topic"], registry=self.registry,
        )  # fmt: skip
        self.events_processed = Counter(
            "memstream_events_processed_total", "Records every agent finished with (acknowledged), by topic.",
            ["topic"], registry=self.registry,
        )  # fmt: skip
        self.events_out = Counter(
            "memstream_events_out_total", "Records this process published and the broker acknowledged, by topic.",
            ["topic"], registry=self.registry,
        )  # fmt: skip
        self.send_errors = Counter(
            "memstream_send_errors_total", "Records the broker did not acknowledge, by topic.", ["topic"],
            registry=self.registry,
        )  # fmt: skip
        self.processing_seconds = Histogram(
            "memstream_processing_seconds", "From consumed to acknowledged (every sink wrote it), by topic.",
            ["topic"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.event_age_seconds = Histogram(
            "memstream_event_age_seconds",
            "From the record's timestamp (when it was published) to acknowledged, by topic: end-to-end latency.",
            ["topic"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.stage_seconds = Histogram(
            "memstream_stage_seconds", "Writing one batch to one sink stage, retries included, by stage.",
            ["stage"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        # --- consumer lag (streams/monitoring.py measures it every MEMSTREAM_CONSUMER_LAG_INTERVAL_S)
        self.end_offset = Gauge(
            "memstream_consumer_end_offset", "The partition's end offset (high watermark of the last fetch).",
            ["group", "topic", "partition"], registry=self.registry,
        )  # fmt: skip
        self.committed_offset = Gauge(
            "memstream_consumer_committed_offset", "The next offset the group will read (its committed offset).",
            ["group", "topic", "partition"], registry=self.registry,
        )  # fmt: skip
        self.lag = Gauge(
            "memstream_consumer_lag", "Records in the partition the group has not committed yet (end - committed).",
            ["group", "topic", "partition"], registry=self.registry,
        )  # fmt: skip
        # --- failures
        self.dead_letters = Counter(
            "memstream_dead_letters_total", "Records sent to memstream.dlq.v1, by stage and error.",
            ["stage", "error"], registry=self.registry,
        )  # fmt: skip
        self.retries = Counter(
            "memstream_retries_total", "Failed attempts retried with backoff, by operation and error.",
            ["operation", "error"], registry=self.registry,
        )  # fmt: skip
        self.code_defect = Gauge(
            "memstream_code_defect",
            "When (unix time) a code defect in an operation stopped a worker of this group; present from the"
            " restart until a batch goes through (streams/defects.py).",
            ["operation", "error"], registry=self.registry,
        )  # fmt: skip

    def count_redactions(self, found: Tally[str], *, stage: str) -> None:
        for kind, n in found.items():
            self.redactions.labels(kind=kind, stage=stage).inc(n)

    def count_retry(self, operation: str, error: BaseException) -> None:
        self.retries.labels(operation=operation, error=type(error).__name__).inc()

    def forget_partitions(self, group: str, partitions: Iterable[tuple[str, int]]) -> None:
        """Drop the offset series of partitions this worker no longer holds."""
        for topic, partition in partitions:
            for gauge in (self.end_offset, self.committed_offset, self.lag):
                gauge.remove(group, topic, str(partition))


class MetricsServerError(MemstreamError):
    """The metrics endpoint could not be served (its port is taken, say)."""


def serve_metrics(registry: CollectorRegistry, *, host: str, port: int) -> WSGIServer:
    """Serve ``registry`` at ``http://host:port/metrics`` in a daemon thread (port 0: a free one)."""
    try:
        server, _ = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise MetricsServerError(
            f"cannot serve metrics on {host}:{port}: {exc}; set MEMSTREAM_WORKER_METRICS_PORT=0 for a free port"
            " (or -1 for none)"
        ) from exc
    log.info("serving Prometheus metrics on http://%s:%d/metrics", host, server.server_port)
    return server
