"""Following ``memstream.audit.v1`` as a consumer of one's own (``memstream audit tail``, and
the example in ``examples/audit_consumer.py``).

What a follower sees:

- **Its own position.** It reads in its own consumer group and commits offsets only after
  its handler has returned for every record before them, so a restart continues where it
  stopped; two groups each see everything.
- **In order per tenant.** The relay publishes in ``seq`` order keyed by tenant, so one
  tenant's records are in one partition, in order.
- **Each change once.** The relay may publish a page of records again after a crash
  (``streams/audit_relay.py``). A record whose ``seq`` is not above the highest the
  follower has handled for its tenant is skipped. After a restart that high-water mark is
  rebuilt from the ``lookback`` records before each partition's committed offset (a relay
  repeats at most one page, 500 records, per crash).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from memstream.kafka_security import KafkaSecurity
from schemas.codec import audit_record_codec
from schemas.errors import DecodeError
from schemas.topics import AUDIT

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class FollowStats:
    handled: int = 0
    #: Records published twice by the relay (or before the committed position), not handed on.
    repeats_skipped: int = 0
    undecodable: int = 0
    #: Highest seq handled per tenant.
    high_water: dict[str, int] = field(default_factory=dict)


class _Rewind(ConsumerRebalanceListener):  # type: ignore[misc]
    """On assignment, hold the new partitions until the follower has rebuilt the per-tenant
    high-water marks from the records just before the group's committed offsets (the
    listener runs beside the fetch loop, so the rebuild happens in the loop, before any
    record of those partitions is handled)."""

    def __init__(self, follower: AuditFollower) -> None:
        self.follower = follower

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        return None

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.follower.consumer.pause(*assigned)
        self.follower._to_rewind |= assigned


class AuditFollower:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        security: KafkaSecurity,
        group_id: str,
        tenant: str | None = None,
        from_beginning: bool = False,
        lookback: int = 2000,
        session_timeout_s: float = 6.0,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = security
        self.group_id = group_id
        self.tenant = tenant
        self.lookback = lookback
        self.codec = audit_record_codec()
        self.stats = FollowStats()
        self._to_rewind: set[TopicPartition] = set()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            group_id=group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest" if from_beginning else "latest",
            # The embedded broker holds a new group's first join for half the session timeout.
            session_timeout_ms=int(session_timeout_s * 1000),
            heartbeat_interval_ms=int(session_timeout_s * 250),
            **security.client_kwargs(),
        )

    def _wanted(self, key: bytes | None) -> bool:
        return self.tenant is None or key == self.tenant.encode()

    def _decode(self, value: bytes | None) -> dict[str, Any] | None:
        try:
            return self.codec.decode(value or b"")
        except DecodeError as exc:
            self.stats.undecodable += 1
            log.warning("an audit record that does not decode: %s", exc.reason)
            return None

    async def _rebuild_high_water(self, assigned: set[TopicPartition]) -> None:
        rewinds: dict[TopicPartition, int] = {}
        for tp in assigned:
            committed = await self.consumer.committed(tp)
            if committed:
                rewinds[tp] = committed
        if not rewinds:
            return
        reader = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers, group_id=None, enable_auto_commit=False,
            **self.security.client_kwargs(),
        )  # fmt: skip
        await reader.start()
        try:
            reader.assign(list(rewinds))
            for tp, committed in rewinds.items():
                reader.seek(tp, max(0, committed - self.lookback))
            pending = dict(rewinds)
            while pending:
                batches = await reader.getmany(*pending, timeout_ms=2000)
                if not batches:
                    break  # nothing more to read: the committed offsets are behind us
                for tp, records in batches.items():
                    for record in records:
                        if record.offset >= pending.get(tp, -1):
                            pending.pop(tp, None)
                            break
                        if self._wanted(record.key) and (decoded := self._decode(record.value)) is not None:
                            self._mark(decoded)
        finally:
            await reader.stop()

    def _mark(self, record: dict[str, Any]) -> None:
        tenant, seq = str(record["tenant_id"]), int(record["seq"])
        if seq > self.stats.high_water.get(tenant, -1):
            self.stats.high_water[tenant] = seq

    def _is_new(self, record: dict[str, Any]) -> bool:
        return int(record["seq"]) > self.stats.high_water.get(str(record["tenant_id"]), -1)

    async def run(
        self,
        handle: Handler,
        *,
        max_records: int | None = None,
        idle_exit_s: float | None = None,
        stop: asyncio.Event | None = None,
    ) -> FollowStats:
        """Hand every new record to ``handle`` until ``stop`` is set, ``max_records`` were
        handled, or nothing arrived for ``idle_exit_s``; commit after each batch."""
        self.consumer.subscribe([AUDIT], listener=_Rewind(self))
        await self.consumer.start()
        last_record = time.monotonic()
        try:
            while not (stop and stop.is_set()):
                if max_records is not None and self.stats.handled >= max_records:
                    break
                if self._to_rewind:
                    assigned, self._to_rewind = self._to_rewind, set()
                    await self._rebuild_high_water(assigned)
                    self.consumer.resume(*(tp for tp in assigned if tp in self.consumer.assignment()))
                batches = await self.consumer.getmany(timeout_ms=500)
                if not batches:
                    if idle_exit_s is not None and time.monotonic() - last_record > idle_exit_s:
                        break
                    continue
                last_record = time.monotonic()
                offsets: dict[TopicPartition, int] = {}
                for tp, records in batches.items():
                    for record in records:
                        offsets[tp] = record.offset + 1
                        if not self._wanted(record.key) or (decoded := self._decode(record.value)) is None:
                            continue
                        if not self._is_new(decoded):
                            self.stats.repeats_skipped += 1
                            continue
                        await handle(decoded)
                        self._mark(decoded)
                        self.stats.handled += 1
                        if max_records is not None and self.stats.handled >= max_records:
                            break
                    else:
                        continue
                    break
                await self.consumer.commit(offsets)
        finally:
            await self.consumer.stop()
        return self.stats
