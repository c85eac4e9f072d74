"""The gateway's Prometheus metrics (``GET /metrics``), one registry per app instance.
Every metric is listed in docs/operations.md, "Metrics"."""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter as Tally
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstream.llm.base import LLMClient
from memstream.metrics import CacheCollector, CacheSources, LLMCollector

#: prometheus_client's variable naming the folder of its multiprocess mode.
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: Seconds: a cached read takes milliseconds, a cold 100k-memory context about a second.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class GatewayMetrics:
    """``multiprocess_dir``: the gateway runs as several processes (``gateway_workers``), each
    writing its counters to files there (prometheus_client's multiprocess mode, on when
    ``PROMETHEUS_MULTIPROC_DIR`` names that folder before prometheus_client is imported), and
    any one of them answers a scrape with the sum of all. The caches' and the LLM clients'
    figures are always the answering process's own."""

    def __init__(self, *, multiprocess_dir: str | None = None) -> None:
        self.registry = CollectorRegistry()
        #: What ``GET /metrics`` exposes: this registry, or every process's counters together.
        self.exposed = self.registry
        if multiprocess_dir is not None:
            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed, path=multiprocess_dir)  # type: ignore[no-untyped-call]
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
        self.events_out = Counter(
            "memstream_events_out_total", "Records this process published and the broker acknowledged, by topic.",
            ["topic"], registry=self.registry,
        )  # fmt: skip
        self.requests = Histogram(
            "memstream_gateway_request_seconds",
            "HTTP requests, by method, route (its template, e.g. /v1/sessions/{session_id}/buffer) and status.",
            ["method", "route", "status"], buckets=REQUEST_BUCKETS, registry=self.registry,
        )  # fmt: skip

    def watch(self, *, caches: CacheSources, llms: Callable[[], Iterable[LLMClient | None]]) -> None:
        """Export the caches' hit counts and the LLM clients' usage at each scrape."""
        for collector in (CacheCollector(caches), LLMCollector(llms)):
            self.registry.register(collector)
            if self.exposed is not self.registry:
                self.exposed.register(collector)

    def count_redactions(self, found: Tally[str], *, stage: str) -> None:
        for kind, n in found.items():
            self.redactions.labels(kind=kind, stage=stage).inc(n)


#: The header naming a request in both directions: a caller's own id (letters, digits, ``._:-``,
#: up to 128) is echoed, otherwise the gateway makes one; every answer carries it, and a caller
#: quotes it when reporting a problem.
REQUEST_ID_HEADER = "x-request-id"
_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")


def request_id(scope: Scope) -> bytes:
    """The request's id: the caller's, if it is well formed, else a new one (kept in the scope)."""
    known = scope.get("memstream.request_id")
    if known is None:
        presented = next((v for k, v in scope["headers"] if k == REQUEST_ID_HEADER.encode()), b"")
        known = presented if _REQUEST_ID.fullmatch(presented) else uuid.uuid4().hex.encode()
        scope["memstream.request_id"] = known
    return bytes(known)


class RequestTimer:
    """ASGI middleware timing every HTTP request into ``memstream_gateway_request_seconds``
    (the app's ``state.gateway.metrics``, once its lifespan has opened them), and naming it
    with an ``X-Request-Id`` on the answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = 500  # what the client sees when the app raises before answering
        named = (REQUEST_ID_HEADER.encode(), request_id(scope))

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message = {**message, "headers": [*message.get("headers", ()), named]}
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            state = getattr(scope["app"].state, "gateway", None)
            if state is not None:
                route = getattr(scope.get("route"), "path", "unmatched")  # set by the router on a match
                state.metrics.requests.labels(method=scope["method"], route=route, status=str(status)).observe(
                    time.monotonic() - started
                )
