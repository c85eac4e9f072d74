"""The gateway's Prometheus metrics (``GET /metrics``), one registry per app instance."""

from __future__ import annotations

from collections import Counter as Tally

from prometheus_client import CollectorRegistry, Counter


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.turns_accepted = Counter(
            "memstream_gateway_turns_accepted_total",
            "Turns acknowledged by the broker.",
            registry=self.registry,
        )
        self.redactions = Counter(
            "memstream_redactions_total",
            "Secrets and personal data replaced by placeholders, by kind.",
            ["kind", "stage"],
            registry=self.registry,
        )
        self.permission_decisions = Counter(
            "memstream_permission_decisions_total",
            "Tool-permission decisions, by decision and tier.",
            ["decision", "tier"],
            registry=self.registry,
        )
        self.auth_failures = Counter(
            "memstream_gateway_auth_failures_total", "Requests refused with 401, 403 or 429.", ["status"],
            registry=self.registry,
        )  # fmt: skip

    def count_redactions(self, found: Tally[str], *, stage: str) -> None:
        for kind, n in found.items():
            self.redactions.labels(kind=kind, stage=stage).inc(n)
