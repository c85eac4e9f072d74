"""Publishing turns: Avro to ``memstream.turns.v1``, answered only after the broker acknowledged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from memstream.errors import MemstreamError
from schemas.codec import AvroCodec
from schemas.turns import turn_key
from streams.topics import TURNS

log = logging.getLogger(__name__)


class BrokerUnavailableError(MemstreamError):
    """The broker did not acknowledge; nothing unacknowledged may be reported as accepted."""


class TurnProducer:
    """A lazily (re)started aiokafka producer: a broker that is down at start-up is
    retried on the next request instead of failing the gateway."""

    def __init__(self, bootstrap_servers: str, *, codec: AvroCodec, timeout_s: float, max_request_bytes: int) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.codec = codec
        self.timeout_s = timeout_s
        self.max_request_bytes = max_request_bytes
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()

    async def _started(self) -> AIOKafkaProducer:
        if self._producer is not None:
            return self._producer
        async with self._lock:
            if self._producer is None:
                producer = AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap_servers,
                    acks="all",
                    linger_ms=2,
                    # The embedded broker rejects InitProducerId v0 (FACTS.md); sinks are
                    # idempotent on event id, so producer retries cannot duplicate memory.
                    enable_idempotence=False,
                    max_request_size=self.max_request_bytes,
                    request_timeout_ms=int(self.timeout_s * 1000),
                    client_id="memstream-gateway",
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

    async def publish(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Send every record and wait until the broker acknowledged all of them."""
        producer = await self._started()
        encoded = [(turn_key(r["tenant_id"], r["session_id"]), self.codec.encode(r)) for r in records]
        try:
            futures = [await producer.send(TURNS, key=key, value=value) for key, value in encoded]
            await asyncio.wait_for(asyncio.gather(*futures), timeout=self.timeout_s)
        except (KafkaError, OSError, TimeoutError) as exc:
            raise BrokerUnavailableError(f"the broker did not acknowledge: {exc!r}") from exc

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
