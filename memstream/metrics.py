"""Prometheus collectors for what the worker and the gateway share: caches and LLM clients.

Both read plain counters the objects keep anyway (``hits``/``misses``, ``LLMUsage``) when
``/metrics`` is scraped, so the caches and clients need no Prometheus code of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memstream.llm.base import LLMClient


class CacheStats(Protocol):
    """A cache that counts its lookups: a hit answered from the cache, a miss went to the source."""

    hits: int
    misses: int


CacheSources = Callable[[], Mapping[str, CacheStats | None]]


class CacheCollector(Collector):
    """``memstream_cache_requests_total{cache, result}`` and ``memstream_cache_hit_ratio{cache}``."""

    def __init__(self, sources: CacheSources) -> None:
        #: Called at each scrape: caches opened later (the worker's embedder) appear once they exist.
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "memstream_cache_requests", "Cache lookups, by cache and result (hit or miss).", labels=["cache", "result"]
        )
        ratio = GaugeMetricFamily(
            "memstream_cache_hit_ratio", "Hits / lookups since the process started, by cache.", labels=["cache"]
        )
        for name, stats in sorted(self.sources().items()):
            if stats is None:
                continue
            hits, misses = stats.hits, stats.misses
            requests.add_metric([name, "hit"], hits)
            requests.add_metric([name, "miss"], misses)
            ratio.add_metric([name], hits / (hits + misses) if hits + misses else 0.0)
        yield requests
        yield ratio

    def describe(self) -> Iterable[Metric]:
        return []  # the families depend on which caches exist at scrape time


class LLMCollector(Collector):
    """Calls, tokens, retries and errors of the LLM clients of this process, by model."""

    def __init__(self, clients: Callable[[], Iterable[LLMClient | None]]) -> None:
        self.clients = clients

    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily("memstream_llm_calls", "LLM calls made (each may retry).", labels=["model"])
        tokens = CounterMetricFamily(
            "memstream_llm_tokens", "Tokens sent to (input) and received from (output) the LLM.",
            labels=["model", "direction"],
        )  # fmt: skip
        retries = CounterMetricFamily(
            "memstream_llm_retries", "Attempts repeated after a 429, 5xx or timeout.", labels=["model"]
        )
        errors = CounterMetricFamily(
            "memstream_llm_errors", "LLM calls that failed after their retries, by kind.", labels=["model", "kind"]
        )
        for client in self.clients():
            if client is None:
                continue
            usage = client.usage
            calls.add_metric([client.name], usage.calls)
            tokens.add_metric([client.name, "input"], usage.input_tokens)
            tokens.add_metric([client.name, "output"], usage.output_tokens)
            retries.add_metric([client.name], usage.retries)
            for kind, n in sorted(usage.errors.items()):
                errors.add_metric([client.name, kind], n)
        yield from (calls, tokens, retries, errors)

    def describe(self) -> Iterable[Metric]:
        return []
