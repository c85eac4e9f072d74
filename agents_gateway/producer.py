"""Publishing turns: Avro to ``memstream.turns.v1``, answered only after the broker acknowledged."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from memstream.errors import MemstreamError
from memstream.kafka_security import KafkaSecurity
from schemas.codec import AvroCodec
from schemas.topics import TURNS
from schemas.turns import turn_key
from streams.broker_reset import WATCH_INTERVAL_S, BrokerWatch
from streams.topics import ensure_topics

log = logging.getLogger(__name__)


class BrokerUnavailableError(MemstreamError):
    """The broker did not acknowledge; nothing unacknowledged may be reported as accepted."""


class TurnProducer:
    """A lazily (re)started aiokafka producer: a broker that is down at start-up is
    retried on the next request instead of failing the gateway.

    With ``watch_cluster`` (the embedded broker, which comes back empty from a restart) it
    also asks the broker's cluster id at most every ``WATCH_INTERVAL_S`` before publishing and
    starts a new producer when the id changed: a producer that knew the old broker still has
    its topics' metadata and the new broker acknowledges records sent to partitions of topics
    it does not have, which are then nowhere (measured). A failed publish also drops the
    producer. What is left is a window of ``WATCH_INTERVAL_S`` in which a broker restarted
    between two requests, with none failing, can swallow a publish; a real Kafka cluster keeps
    its log and its id, and needs none of this.

    With ``topic_partitions`` (also the embedded broker) every new producer first makes sure
    the topics exist with that many partitions: after a reset the gateway may publish before
    any worker re-created them, and the broker would auto-create the turns topic with 4 (for the
    same reason the gateway's process never lets a metadata ask create a topic there:
    ``streams/topics.py: refuse_topic_auto_creation``)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        security: KafkaSecurity,
        codec: AvroCodec,
        timeout_s: float,
        max_request_bytes: int,
        watch_cluster: bool = False,
        topic_partitions: int | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = security
        self.codec = codec
        self.timeout_s = timeout_s
        self.max_request_bytes = max_request_bytes
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()
        self._stopping: set[asyncio.Task[None]] = set()
        self._watch = (
            BrokerWatch(
                bootstrap_servers,
                security=security,
                on_reset=self._new_cluster,
                reaction="the gateway starts a new producer",
            )
            if watch_cluster
            else None
        )
        self._next_check = 0.0
        self.topic_partitions = topic_partitions

    async def _started(self) -> AIOKafkaProducer:
        if self._producer is not None:
            return self._producer
        async with self._lock:
            if self._producer is None:
                if self.topic_partitions is not None:
                    try:
                        await asyncio.wait_for(
                            ensure_topics(
                                self.bootstrap_servers, security=self.security, partitions=self.topic_partitions
                            ),
                            timeout=self.timeout_s,
                        )
                    except (KafkaError, OSError, TimeoutError) as exc:
                        raise BrokerUnavailableError(f"broker unreachable: {exc!r}") from exc
                producer = AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap_servers,
                    acks="all",
                    linger_ms=2,
                    # The embedded broker rejects InitProducerId v0 (docs/embedded-broker.md); sinks are
                    # idempotent on event id, so producer retries cannot duplicate memory.
                    enable_idempotence=False,
                    max_request_size=self.max_request_bytes,
                    request_timeout_ms=int(self.timeout_s * 1000),
                    client_id="memstream-gateway",
                    **self.security.client_kwargs(),
                )
                try:
                    await asyncio.wait_for(producer.start(), timeout=self.timeout_s)
                except (KafkaError, OSError, TimeoutError) as exc:
                    await producer.stop()
                    raise BrokerUnavailableError(f"broker unreachable: {exc!r}") from exc
                self._producer = producer
        return self._producer

    async def check(self) -> str:
        producer = await self._started()
        await asyncio.wait_for(producer.client.force_metadata_update(), timeout=2.0)
        brokers = producer.client.cluster.brokers()
        if not brokers:
            raise BrokerUnavailableError("broker metadata lists no brokers")
        return f"{len(brokers)} broker(s)"

    async def publish(self, records: Sequence[Mapping[str, Any]], *, received_at: Sequence[datetime]) -> None:
        """Send every record and wait until the broker acknowledged all of them. Each record's
        Kafka time is when the gateway first received it (``received_at``: a retry's is its
        first attempt's), which erasure and consent are ordered against."""
        if self._watch is not None and time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + WATCH_INTERVAL_S
            await self._watch.check()
        producer = await self._started()
        encoded = [(turn_key(r["tenant_id"], r["session_id"]), self.codec.encode(r)) for r in records]
        try:
            futures = [
                await producer.send(TURNS, key=key, value=value, timestamp_ms=_millis(when))
                for (key, value), when in zip(encoded, received_at, strict=True)
            ]
            await asyncio.wait_for(asyncio.gather(*futures), timeout=self.timeout_s)
        except (KafkaError, OSError, TimeoutError) as exc:
            self._discard(producer)
            self._next_check = 0.0  # ask who the broker is before the next publish
            raise BrokerUnavailableError(f"the broker did not acknowledge: {exc!r}") from exc

    def _new_cluster(self) -> None:
        if self._producer is not None:
            self._discard(self._producer)

    def _discard(self, producer: AIOKafkaProducer) -> None:
        """Start afresh on the next request. A broker that failed a publish may come back as a
        new one: the embedded broker comes back empty, and a producer that knew the old one
        fails there (UnknownError) or, worse, is acknowledged into nowhere, while a new
        producer asks for fresh metadata and succeeds."""
        if self._producer is not producer:
            return
        self._producer = None
        log.warning("dropping the Kafka producer after a failed publish; the next request starts a new one")
        task = asyncio.create_task(_stop(producer))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def close(self) -> None:
        if self._watch is not None:
            await self._watch.close()
        await asyncio.gather(*self._stopping, return_exceptions=True)  # discarded ones: errors expected
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


async def _stop(producer: AIOKafkaProducer) -> None:
    """Stop a discarded producer; its broker may be gone, so its errors are expected and only logged."""
    try:
        await producer.stop()
    except (KafkaError, OSError) as exc:
        log.debug("stopping a discarded producer: %s", exc)


def _millis(when: datetime) -> int:
    return int(when.timestamp() * 1000)
