"""The worker's Prometheus metrics (served on ``MEMSTREAM_WORKER_METRICS_PORT`` when set)."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter


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
            "memstream_facts_total", "Facts applied, by action (insert, merge, supersede, duplicate).",
            ["action"], registry=self.registry,
        )  # fmt: skip
        self.audit_published = Counter(
            "memstream_audit_published_total", "Audit records published to memstream.audit.v1.",
            registry=self.registry,
        )  # fmt: skip

    def count_redactions(self, found: Tally[str], *, stage: str) -> None:
        for kind, n in found.items():
            self.redactions.labels(kind=kind, stage=stage).inc(n)
